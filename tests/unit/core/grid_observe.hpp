#pragma once
// Everything a caller can learn of a Service, for the state grid's "-" cells (nothing
// changed at all): the answer of every public query, by the query's name. The grid's
// test checks that the names are exactly the const member functions service.hpp
// declares, so a query added there and not here fails it.

#include <string>
#include <utility>
#include <vector>

#include "config/model.hpp"
#include "daemon/core/service.hpp"

namespace pkit::core::test::grid {

struct Seen {
    // Each query's name and its answer as text; a query that takes arguments is asked
    // for every run number from 0 to a few past the current one.
    std::vector<std::pair<std::string, std::string>> answers;
    // spec(), compared with == (which ignores the stamp: its number is an answer).
    config::ServiceSpec spec;
};

Seen observe(const Service& s);

// The queries whose answers differ between `before` and `after`, "query: before →
// after" each on a line; empty when none does.
std::string differences(const Seen& before, const Seen& after);

}  // namespace pkit::core::test::grid
