#!/usr/bin/env bash
# Run HERE (a machine with network), before a device run: fills the ignored folder .device/ of the checkout with
# what the GPU machine lacks and cannot fetch (it has no network):
#
#   .device/wheels/  wheels for CPython 3.12 / manylinux x86-64 of the project's dependencies the device image does
#                    not hold (its image has jax 0.11 + CUDA, flax, optax, orbax-checkpoint, h5py, numba, numpy,
#                    matplotlib, tqdm, absl-py, cloudpickle, etils, protobuf, packaging, psutil, pyyaml):
#                      sgfmill        pure Python     (SGF reading)
#                      ml_collections pure Python     (configs; needs absl-py, PyYAML: in the image)
#                      tensorboardX   pure Python     (metrics; needs numpy, packaging, protobuf: in the image)
#                      grain          binary, cp312   (input pipeline; needs absl-py, cloudpickle, etils, numpy,
#                                                      protobuf: in the image, and the two below)
#                      array_record   binary, cp312   (imported by `import grain`)
#                      portpicker     pure Python     (imported by `import grain`; needs psutil: in the image)
#   .device/kgs/     the KGS archives of ../shared/data/kgs (all nine: 13.6 MB; 2015 alone is 3.2 MB)
#
#   bash benchmarks/device/fetch_wheels.sh [KGS_DIR]      # KGS_DIR defaults to ../shared/data/kgs
#
# Versions are pinned to the ones the project is tested with here (pip list of this machine).
set -euo pipefail
cd "$(dirname "$0")/../.."
KGS=${1:-../shared/data/kgs}
PY=${PYTHON:-python}
mkdir -p .device/wheels .device/kgs
rm -f .device/wheels/*.whl
"$PY" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
    -d .device/wheels \
    sgfmill==1.1.1 ml_collections==1.1.0 tensorboardX==2.6.5 grain==0.2.18 array_record==0.8.6 portpicker==1.6.0
if [ -d "$KGS" ]; then
    cp -u "$KGS"/KGS-*.tar.gz .device/kgs/
else
    echo "fetch_wheels.sh: no KGS archives at $KGS: the device run will fall back to the sample corpus" >&2
fi
ls -l .device/wheels .device/kgs
du -sh .device
