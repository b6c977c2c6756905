// The one file of pkit_unit_proto that compiles doctest's implementation and main.
#define PKIT_PROTO_DOCTEST_MAIN
#include "tests/unit/proto/proto_doctest.hpp"
