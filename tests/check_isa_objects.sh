#!/bin/sh
# test_isa_objects: no function compiled for one ISA can be merged with another file's copy.
#
# egelu::nn compiles some files for an ISA other than the library's own (the micro-kernels,
# gemm/kernels_<isa>.cpp, and the activation passes, activations/passes_<isa>.cpp). Were one of
# them to define a symbol another object also defines -- an inline function or a template
# instantiated in both, which the linker keeps one copy of -- the library's SSE2 code
# could run the AVX-512 copy (illegal instruction on a CPU without it), or the reverse.
# This lists the functions each object defines for the linker (nm types T, W and i: code;
# data such as the type_info objects UBSan emits for function types may be merged, having
# no instructions) and fails, naming them, when one that an ISA-specific object defines is
# defined by another object too.
#
# Usage: check_isa_objects.sh NM 'OBJECT|OBJECT|...'
set -eu
nm=$1
old_ifs=$IFS
IFS='|'
# shellcheck disable=SC2086 # split on | on purpose
set -- $2
IFS=$old_ifs
export LC_ALL=C
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

symbols() { "$nm" -P --defined-only "$1" | awk '$2 ~ /^[TWi]$/ { print $1 }' | sort -u; }

isa_objects=0
for object; do symbols "$object"; done | sort | uniq -d >"$work/shared"
status=0
for object; do
  case $object in
  *kernels_sse2.cpp.o | *kernels_avx2.cpp.o | *kernels_avx512.cpp.o | *kernels_avx512_vnni.cpp.o | *passes_avx2.cpp.o | *passes_avx512.cpp.o) ;;
  *) continue ;;
  esac
  isa_objects=$((isa_objects + 1))
  symbols "$object" | comm -12 - "$work/shared" >"$work/found"
  if [ -s "$work/found" ]; then
    echo "$object defines symbols another object of egelu::nn defines too:"
    sed 's/^/  /' "$work/found" | head -20
    status=1
  fi
done
echo "checked $isa_objects ISA-specific objects among $# objects"
exit $status
