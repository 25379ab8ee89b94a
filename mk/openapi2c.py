#!/usr/bin/env python3
"""Convert docs/api.yaml (OpenAPI 3.1) to compact JSON embedded as a C
array, so the chrooted front serves /v1/openapi.json without a file."""
import json
import sys

import yaml


def main():
    src, dst = sys.argv[1], sys.argv[2]
    with open(src, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    if not isinstance(doc, dict) or not str(doc.get("openapi", "")).startswith("3.1"):
        sys.exit(f"{src}: not an OpenAPI 3.1 document")
    text = json.dumps(doc, separators=(",", ":"), ensure_ascii=True, sort_keys=False)
    data = text.encode("ascii")
    with open(dst, "w", encoding="ascii") as out:
        out.write("/* Generated from %s by mk/openapi2c.py; do not edit. */\n" % src)
        out.write("#include <stddef.h>\n\n")
        out.write("extern const char api_openapi_json[];\n")
        out.write("extern const size_t api_openapi_json_len;\n\n")
        out.write("const char api_openapi_json[] = {\n")
        for i in range(0, len(data), 16):
            out.write("\t" + ", ".join("0x%02x" % b for b in data[i:i + 16]) + ",\n")
        out.write("\t0x00\n};\n")
        out.write("const size_t api_openapi_json_len = %d;\n" % len(data))


if __name__ == "__main__":
    main()
