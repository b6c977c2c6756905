#pragma once
// Every file of pkit_unit_config includes doctest through this header; main.cpp alone
// compiles doctest's implementation and main.
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
