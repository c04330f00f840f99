"""ComputeDomain objects as upstream's controller and IMEX daemons write them, for the tests, the bench and the
demo. A ComputeDomainClique carries the two labels upstream's daemon gives every clique it creates
(resource.nvidia.com/computeDomain=<CD uid>, resource.nvidia.com/computeDomain.cliqueID=<clique id>): nvdra's
clique watch is selected by the second."""

GV = "resource.nvidia.com/v1beta1"
DOMAIN_LABEL = "resource.nvidia.com/computeDomain"
CLIQUE_LABEL = "resource.nvidia.com/computeDomain.cliqueID"


def clique_object(uid, clique, node, status="Ready", namespace="default", ip="10.0.0.7", labels=True):
    """ComputeDomainClique <uid>.<clique> listing `node`'s daemon with `status`; labels=False: without upstream's
    labels (an object nvdra's selected watch does not see)."""
    meta = {"name": f"{uid}.{clique}", "namespace": namespace}
    if labels:
        meta["labels"] = {DOMAIN_LABEL: uid, CLIQUE_LABEL: clique}
    return {"apiVersion": GV, "kind": "ComputeDomainClique", "metadata": meta,
            "daemons": [{"nodeName": node, "ipAddress": ip, "cliqueID": clique, "index": 0, "status": status}]}
