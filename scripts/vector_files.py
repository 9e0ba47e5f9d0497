"""Writes or checks a generated folder of conformance vectors: the one loop
the vector scripts (make_crash_vectors.py, make_ggml_vectors.py) share.
Python's standard library only."""

import os


def sync(out, label, files, check, compared=lambda name: True):
    """Writes files ({name: bytes}) into out, or with check compares each
    name for which compared(name) holds with the committed file and prints
    `differs: LABEL/NAME` for each difference. Returns how many differ."""
    os.makedirs(out, exist_ok=True)
    differ = 0
    for name, data in sorted(files.items()):
        path = os.path.join(out, name)
        if not check:
            with open(path, "wb") as f:
                f.write(data)
            continue
        if not compared(name):
            continue
        have = None
        if os.path.exists(path):
            with open(path, "rb") as f:
                have = f.read()
        if have != data:
            print("differs: %s/%s" % (label, name))
            differ += 1
    return differ
