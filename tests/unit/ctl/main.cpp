// The one file of pkit_unit_ctl that compiles doctest's implementation and main.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
