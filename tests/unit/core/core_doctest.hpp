#pragma once
// Every file of pkit_unit_core includes doctest through this header. CMake defines
// DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN for the whole target, but doctest's implementation
// (and main) must be compiled in one file only: main.cpp is that file.
#ifndef PKIT_CORE_DOCTEST_MAIN
#undef DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#undef DOCTEST_CONFIG_IMPLEMENT
#elif !defined(DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN)
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#endif
#include <doctest/doctest.h>
