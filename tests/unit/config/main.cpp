// The one file of pkit_unit_config that compiles doctest's implementation and main.
#define PKIT_CONFIG_DOCTEST_MAIN
#include "tests/unit/config/config_doctest.hpp"
