#pragma once
// Every file of pkit_unit_config includes doctest through this header. CMake defines
// DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN for the whole target, but doctest's
// implementation (and main) must be compiled in one file only: main.cpp is that file.
#ifndef PKIT_CONFIG_DOCTEST_MAIN
#undef DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#undef DOCTEST_CONFIG_IMPLEMENT
#elif !defined(DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN)
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#endif
#include <doctest/doctest.h>

#include <string>
#include <vector>

// Failed comparisons of diagnostic lists print the lists, one line each.
template <>
struct doctest::StringMaker<std::vector<std::string>> {
    static doctest::String convert(const std::vector<std::string>& lines) {
        std::string out = "{";
        for (const std::string& line : lines) {
            out += "\n    " + line;
        }
        out += lines.empty() ? "}" : "\n}";
        return out.c_str();
    }
};
