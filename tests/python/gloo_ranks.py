"""Gloo ranks on this machine for the torch tests that compare compiled
programs with eager on real process groups (test_torch_gloo.py,
test_torch_gloo_transformer.py, test_torch_ported.py): a free port for the
rendezvous, and each rank's default process group."""
import datetime
import os
import socket


def free_port():
    """A TCP port nothing listens on now (the ranks' rendezvous)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def init(rank, port, world, timeout_s=600):
    """Joins rank `rank` of `world` to the gloo group at 127.0.0.1:`port`.
    A rank left waiting in a collective another rank never reaches fails
    after `timeout_s` instead of holding the test to ctest's limit."""
    import torch.distributed as dist
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=timeout_s))
