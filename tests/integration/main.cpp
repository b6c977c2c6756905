// The one file that compiles doctest's implementation and main (see harness_doctest.hpp).
#define PKIT_ITEST_DOCTEST_MAIN
#include "tests/integration/harness_doctest.hpp"
