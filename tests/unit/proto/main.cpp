// The one file of pkit_unit_proto that compiles doctest's implementation and main.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "tests/unit/proto/proto_doctest.hpp"
