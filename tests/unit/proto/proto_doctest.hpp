#pragma once
// Every file of pkit_unit_proto includes doctest through this header; main.cpp alone
// compiles doctest's implementation and main.
#include <doctest/doctest.h>
