#pragma once
// Every file of the integration binary includes doctest through this header. CMake
// defines DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN for the whole target, but doctest's
// implementation (and main) must be compiled in one file only, or the link sees it
// once per file: main.cpp is that file.
#ifndef PKIT_ITEST_DOCTEST_MAIN
#undef DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#undef DOCTEST_CONFIG_IMPLEMENT
#elif !defined(DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN)
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#endif
#include <doctest/doctest.h>
