// The one file of pkit_unit_shell that compiles doctest's implementation and main.
#define PKIT_SHELL_TEST_MAIN
#include "tests/unit/shell/shell_test.hpp"
