"""kifunet.train.parallel: joining a multi-host run (a Cloud TPU VM among the launchers) and the mesh."""

from __future__ import annotations

import jax
import pytest

from kifunet.train import parallel

LAUNCHER_ENV = ("JAX_COORDINATOR_ADDRESS", "JAX_NUM_PROCESSES", "JAX_PROCESS_ID", "SLURM_JOB_ID", "SLURM_NTASKS",
                "SLURM_PROCID", "OMPI_MCA_orte_hnp_uri", "TPU_WORKER_HOSTNAMES", "TPU_LIBRARY_PATH")


def _machine(tmp_path, monkeypatch, vendors: list[str], libtpu: bool) -> list:
    """A machine whose PCI devices have ``vendors``, with or without libtpu; returns the calls made to
    ``jax.distributed.initialize``."""
    for k in LAUNCHER_ENV:
        monkeypatch.delenv(k, raising=False)
    pci = tmp_path / "pci"
    for i, v in enumerate(vendors):
        (pci / f"0000:00:0{i}.0").mkdir(parents=True)
        (pci / f"0000:00:0{i}.0" / "vendor").write_text(v + "\n")
    monkeypatch.setattr(parallel, "PCI_DEVICES", str(pci))
    if libtpu:
        (tmp_path / "libtpu.so").write_bytes(b"")
        monkeypatch.setenv("TPU_LIBRARY_PATH", str(tmp_path / "libtpu.so"))
    else:
        monkeypatch.setattr("importlib.util.find_spec", lambda name, *a: None if name == "libtpu" else
                            __import__("importlib.machinery").machinery.PathFinder.find_spec(name))
    calls = []
    monkeypatch.setattr(jax.distributed, "is_initialized", lambda: False)
    monkeypatch.setattr(jax.distributed, "initialize", lambda *a, **k: calls.append((a, k)))
    return calls


def test_a_cloud_tpu_vm_joins_its_slice_through_jax_autodetection(tmp_path, monkeypatch):
    calls = _machine(tmp_path, monkeypatch, ["0x8086", "0x1ae0", "0x1af4"], libtpu=True)
    assert parallel.on_cloud_tpu_vm()
    assert parallel.initialize_distributed() is True
    assert calls == [((), {})]  # no arguments: JAX reads the slice's hosts and this host's index from the VM


@pytest.mark.parametrize("vendors,libtpu", [(["0x8086", "0x1af4"], True), (["0x1ae0"], False)],
                         ids=["no-tpu-chip", "no-libtpu"])
def test_a_machine_without_tpus_or_libtpu_stays_one_process(tmp_path, monkeypatch, vendors, libtpu):
    calls = _machine(tmp_path, monkeypatch, vendors, libtpu=libtpu)
    assert not parallel.on_cloud_tpu_vm()
    assert parallel.initialize_distributed() is False and calls == []


def test_the_mesh_of_one_slice_is_jax_make_mesh():
    mesh = parallel.mesh_over(jax.devices()[:1])
    assert mesh.axis_names == (parallel.AXIS,) and mesh.size == 1
