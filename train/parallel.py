"""Data parallelism with pmap semantics: a per-device step over the named axis ``'data'``, mapped once
(:func:`data_parallel`) over a 1-D mesh (:func:`make_mesh`); batch sharding, replication and multi-host start-up.
Why: docs/training.md (Data parallelism and multi-host)."""

from __future__ import annotations

import os

import jax
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from kifunet.train import steps
from kifunet.train.steps import AXIS
from kifunet.train.configs import ConfigError

#: environment variables of the launchers :func:`initialize_distributed` recognises
_MULTIHOST_ENV = {
    "explicit": ("JAX_COORDINATOR_ADDRESS", "JAX_NUM_PROCESSES", "JAX_PROCESS_ID"),
    "slurm": ("SLURM_JOB_ID", "SLURM_NTASKS", "SLURM_PROCID"),
    "openmpi": ("OMPI_MCA_orte_hnp_uri",),
}


# ------------------------------------------------------------------------------------------------------------
# processes and devices


def initialize_distributed() -> bool:
    """Join a multi-host run when a launcher set one up (``JAX_COORDINATOR_ADDRESS``, ``JAX_NUM_PROCESSES``,
    ``JAX_PROCESS_ID``; or what ``jax.distributed.initialize()`` detects: Slurm, Open MPI, TPU hosts); returns
    whether ``jax.distributed`` is initialised. Must run before JAX touches a device; harmless twice."""
    if jax.distributed.is_initialized():
        return True
    env = os.environ
    if all(k in env for k in _MULTIHOST_ENV["explicit"]):
        jax.distributed.initialize(coordinator_address=env["JAX_COORDINATOR_ADDRESS"],
                                   num_processes=int(env["JAX_NUM_PROCESSES"]),
                                   process_id=int(env["JAX_PROCESS_ID"]))
        return True
    slurm = all(k in env for k in _MULTIHOST_ENV["slurm"]) and int(env.get("SLURM_NTASKS", "1")) > 1
    if (slurm or "OMPI_MCA_orte_hnp_uri" in env or env.get("TPU_WORKER_HOSTNAMES", "").count(",") >= 1
            or on_cloud_tpu_vm()):
        jax.distributed.initialize()
        return True
    return False


#: the PCI vendor of Google's TPU chips, and where the kernel lists a machine's PCI devices
_GOOGLE_PCI_VENDOR = "0x1ae0"
PCI_DEVICES = "/sys/bus/pci/devices"


def on_cloud_tpu_vm() -> bool:
    """Whether this machine has TPU chips (a Cloud TPU VM: a Google PCI device) and libtpu to drive them. There
    ``jax.distributed.initialize()`` finds the slice's hosts and this host's index from the VM's metadata, for a
    slice of one host too (orbax's asynchronous checkpointing needs the distributed client)."""
    import importlib.util

    if not (os.environ.get("TPU_LIBRARY_PATH") or importlib.util.find_spec("libtpu")):
        return False
    try:
        names = os.listdir(PCI_DEVICES)
    except OSError:
        return False
    for name in names:
        try:
            with open(os.path.join(PCI_DEVICES, name, "vendor")) as f:
                if f.read().strip() == _GOOGLE_PCI_VENDOR:
                    return True
        except OSError:
            continue
    return False


def use_cpu_devices(n: int) -> bool:
    """Make ``n`` JAX CPU devices (``jax_num_cpu_devices``), so a data-parallel step or forward pass uses every
    core. Only before JAX starts its backends, and not over an explicit ``--xla_force_host_platform_device_count``
    in ``XLA_FLAGS``; returns whether it was set. Accelerator backends are not affected."""
    import os

    if not n or n < 2 or "xla_force_host_platform_device_count" in os.environ.get("XLA_FLAGS", ""):
        return False
    try:
        jax.config.update("jax_num_cpu_devices", int(n))
    except RuntimeError:  # backends already started (e.g. inside a test process): keep what there is
        return False
    return True


def make_mesh(num_devices: int = 0) -> jax.sharding.Mesh:
    """1-D mesh ``('data',)`` over all devices (``num_devices`` > 0: the first ones; single process only)."""
    devices = jax.devices()
    if num_devices:
        if jax.process_count() > 1 and num_devices != len(devices):
            raise ConfigError("num_devices must be 0 (all) in a multi-host run")
        if num_devices > len(devices):
            raise ConfigError(f"num_devices={num_devices} but only {len(devices)} devices")
        devices = devices[:num_devices]
    return mesh_over(devices)


def mesh_over(devices) -> jax.sharding.Mesh:
    """1-D mesh ``('data',)`` over ``devices``: ``jax.make_mesh``'s interconnect-aware order within one slice;
    over several TPU slices (devices with different ``slice_index``, which ``jax.make_mesh`` refuses), slice after
    slice, each in that order (``mesh_utils.create_hybrid_device_mesh``), so only the gradient all-reduce's
    last stage crosses the data-centre network."""
    devices = list(devices)
    slices = {getattr(d, "slice_index", 0) or 0 for d in devices}
    if len(slices) > 1:
        from jax.experimental import mesh_utils

        grid = mesh_utils.create_hybrid_device_mesh((len(devices) // len(slices),), (len(slices),), devices)
        return jax.sharding.Mesh(np.asarray(grid).reshape(-1), (AXIS,))
    return jax.make_mesh((len(devices),), (AXIS,), devices=devices)


def replicate(tree, mesh):
    """Host values -> arrays replicated on every device of the mesh (``P()``); works across hosts."""
    sharding = NamedSharding(mesh, P())

    def put(x):
        if isinstance(x, jax.Array) and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
            data = np.asarray(jax.random.key_data(x))
            impl = jax.random.key_impl(x)
            arr = jax.make_array_from_callback(data.shape, sharding, lambda idx: data[idx])
            return jax.random.wrap_key_data(arr, impl=impl)
        a = np.asarray(x)
        return jax.make_array_from_callback(a.shape, sharding, lambda idx: a[idx])

    return jax.tree.map(put, tree)


def shard_batch(batch: dict, mesh) -> dict:
    """This host's rows -> global arrays split over ``'data'`` (rows of all hosts, in process order)."""
    sharding = NamedSharding(mesh, P(AXIS))
    return {k: jax.make_array_from_process_local_data(sharding, v) for k, v in batch.items()}


# ------------------------------------------------------------------------------------------------------------
# the carries of windowed / summed steps, on the devices


def empty_window(mesh, *, value: bool = False, heads: tuple = ()) -> dict:
    """A zeroed metric window on the devices (replicated), the third argument of a
    :func:`kifunet.train.steps.windowed` step; ``value``: with the sums of a two-headed net
    (``ModelDef.has_value``); ``heads``: of the heads trained (:func:`kifunet.train.steps.trained_heads`)."""
    return replicate(steps.zeros_window(value, heads), mesh)


def empty_sums(mesh, *, value: bool = False, heads: tuple = ()) -> dict:
    """Zeroed evaluation sums on the devices (replicated), the third argument of a
    :func:`kifunet.train.steps.summed` step; ``value``: with the sums of a two-headed net; ``heads``: as above."""
    return replicate(steps.zeros_sums(value, heads), mesh)


def data_parallel(per_device_fn, mesh, *, donate_state: bool = False, carry: bool = False):
    """The one place a per-device step is mapped: state ``P()``, batch ``P('data')``, and with ``carry`` a
    replicated third argument (not donated). ``donate_state``: the caller must not touch the old state."""
    in_specs = (P(), P(AXIS)) + ((P(),) if carry else ())
    mapped = jax.shard_map(per_device_fn, mesh=mesh, in_specs=in_specs, out_specs=P())
    return jax.jit(mapped, donate_argnums=(0,) if donate_state else ())
