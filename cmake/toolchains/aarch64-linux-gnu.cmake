# Cross-compiling for aarch64 Linux (NEON) with Debian's g++-aarch64-linux-gnu, the test
# binaries run under qemu-user (package qemu-user-static):
#
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake \
#         -DCMAKE_PREFIX_PATH=<googletest built for aarch64> ...
#   ctest --test-dir build-aarch64        (runs each test through qemu-aarch64-static)
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(EGELU_AARCH64_TRIPLE aarch64-linux-gnu)
set(EGELU_AARCH64_SYSROOT /usr/${EGELU_AARCH64_TRIPLE})

set(CMAKE_C_COMPILER ${EGELU_AARCH64_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${EGELU_AARCH64_TRIPLE}-g++)

# Libraries and headers come from the aarch64 tree only; the programs CMake runs at
# configure time (none here) from the host.
set(CMAKE_FIND_ROOT_PATH ${EGELU_AARCH64_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
# Packages in both: Eigen is header-only and architecture-independent, and Debian ships
# its CMake package only on the host (/usr/share/eigen3/cmake). Host packages of compiled
# libraries live under the host's multiarch directory (lib/x86_64-linux-gnu), which an
# aarch64 search does not look in; googletest for aarch64 is given by CMAKE_PREFIX_PATH.
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)

# ctest (and add_test) run the target's binaries through qemu-user, with the aarch64
# dynamic loader and libraries from the cross tree.
find_program(EGELU_QEMU_AARCH64 qemu-aarch64-static qemu-aarch64 REQUIRED)
set(CMAKE_CROSSCOMPILING_EMULATOR ${EGELU_QEMU_AARCH64} -L ${EGELU_AARCH64_SYSROOT})
