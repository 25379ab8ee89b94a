#!/bin/sh
# bin2c.sh NAME FILE: FILE's bytes as a C array NAME and its length.
name=$1
file=$2
echo "/* Generated from $file by mk/bin2c.sh. */"
echo "#include <stddef.h>"
echo "extern const unsigned char ${name}[];"
echo "extern const size_t ${name}_len;"
echo "const unsigned char ${name}[] = {"
od -An -v -tx1 "$file" | sed -e 's/ *\([0-9a-f][0-9a-f]\)/0x\1, /g' -e 's/, $/,/'
echo "};"
echo "const size_t ${name}_len = sizeof(${name});"
