// The translation unit that compiles precompiled.hpp for the test suite (tests/CMakeLists.txt).
