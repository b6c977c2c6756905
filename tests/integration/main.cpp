// The one file that compiles doctest's implementation and main.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "tests/integration/harness_doctest.hpp"
