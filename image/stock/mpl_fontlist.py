#!/usr/bin/env python3
"""Make matplotlib's font list for the python stock image.

Usage: mpl_fontlist.py OUT_DIR

Runs the host's matplotlib (the same Debian packages the image holds) with
MPLCONFIGDIR=OUT_DIR, so it writes OUT_DIR/fontlist-vNNN.json, then
rewrites that file in a canonical order. matplotlib lists the fonts it
found from a set, whose order changes with the string hash seed of each
run; sorted, the same packages give the same file and so the same image
digest (docs/image-format.md, "Reproducible").
"""
import glob
import json
import os
import sys


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: mpl_fontlist.py OUT_DIR")
    out = sys.argv[1]
    os.environ["MPLCONFIGDIR"] = out
    import matplotlib.font_manager  # noqa: F401 (writes the list)

    paths = glob.glob(os.path.join(out, "fontlist-v*.json"))
    if len(paths) != 1:
        sys.exit("mpl_fontlist.py: matplotlib wrote %d font lists in %s"
                 % (len(paths), out))
    with open(paths[0], encoding="utf-8") as f:
        fonts = json.load(f)
    for key in ("ttflist", "afmlist"):
        fonts[key].sort(key=lambda e: json.dumps(e, sort_keys=True))
    tmp = paths[0] + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(fonts, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(tmp, paths[0])


main()
