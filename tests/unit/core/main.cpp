// doctest's implementation and main, compiled once for pkit_unit_core.
#define PKIT_CORE_DOCTEST_MAIN
#include "tests/unit/core/core_doctest.hpp"
