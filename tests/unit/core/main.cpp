// doctest's implementation and main, compiled once for pkit_unit_core.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
