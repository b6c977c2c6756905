#pragma once
// Reads what the state grid's test checks from the core's headers as text: the grids
// of daemon/core/service_table.hpp, and the public member functions of a class, so
// that a grid, an input or a query cannot be added to the code and left out of the
// table or the test.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pkit::core::test::grid {

// One grid of a header comment: the line "//   input \ NAME COLUMN..." and then one
// line a row ("//   INPUT CELL..."), up to the first comment line of fewer than two
// words.
struct Grid {
    std::string name;
    std::vector<std::string> columns;
    std::vector<std::pair<std::string, std::vector<std::string>>> rows;
};

// Every grid in `text`, in order.
std::vector<Grid> read_grids(std::string_view text);

// A public member function: its name, and whether it is const (a query) or not (it
// changes the object: an input).
struct Member {
    std::string name;
    bool is_const = false;
};

// The public member functions declared in `class NAME { ... };` of `text`, in order,
// the constructors left out. Comments and function bodies are skipped; a nested type's
// members are not the class's.
std::vector<Member> public_members(std::string_view text, std::string_view class_name);

}  // namespace pkit::core::test::grid
