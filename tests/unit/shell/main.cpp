// The one file of pkit_unit_shell that compiles doctest's implementation and main.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "tests/unit/shell/shell_test.hpp"
