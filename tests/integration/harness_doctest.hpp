#pragma once
// Every file of the integration binary includes doctest through this header; main.cpp
// alone compiles doctest's implementation and main.
#include <doctest/doctest.h>
