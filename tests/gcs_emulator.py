"""``python tests/gcs_emulator.py start --port P ...``: ``gcp-storage-emulator`` with the generation headers that
Cloud Storage sends with an object's bytes.

The emulator answers a download (``alt=media``) without ``x-goog-generation``; tensorstore's GCS driver (orbax's
arrays) reads an object's generation from that header and, without it, fails a read-modify-write of an OCDBT
manifest with ``Malformed StorageGeneration`` (seen when a save writes the manifest more than once). This adds
``x-goog-generation`` and ``x-goog-metageneration`` to every download, as Cloud Storage does, then runs the
emulator's own command line.
"""

import sys

from gcp_storage_emulator.handlers import objects

_download = objects.download


def download(request, response, storage, *args, **kwargs):
    try:
        obj = storage.get_file_obj(request.params["bucket_name"], request.params["object_id"])
    except Exception:  # noqa: BLE001 - a missing object: the emulator's own handler answers 404
        obj = None
    if obj:
        response["x-goog-generation"] = str(obj["generation"])
        response["x-goog-metageneration"] = str(obj["metageneration"])
    return _download(request, response, storage, *args, **kwargs)


objects.download = download  # before the server module builds its routes from it

if __name__ == "__main__":
    from gcp_storage_emulator.__main__ import main

    sys.exit(main(sys.argv[1:]))
