#pragma once
// A tree's instance sets (SPEC §13) changed after load: `pkitctl scale`, and a reload
// that keeps a scaled count while the file's own `instances` is unchanged.

#include <cstddef>
#include <string_view>

#include "config/model.hpp"

namespace pkit::config {

// The file name of a service: `name` up to its "@" (the whole name without one).
std::string_view base_name(std::string_view name);

// How many instances of the file `base` `tree` holds (NAME@1 ... NAME@N); 0 for none.
std::size_t count_instances(const Tree& tree, std::string_view base);

// Sets the instances of `base` (which has at least one in `tree`) to `count` >= 1: the
// highest beyond `count` are removed, the missing ones added as copies of NAME@1. The
// others are left as they are, and so are `after` lists and group members: they name
// the file, which stands for the instances it has (config/model.hpp).
void set_instances(Tree& tree, std::string_view base, std::size_t count);

// The order load_tree() gives services: their files' names in byte order, a file's
// instances in numeric order (web@2 before web@10).
bool load_order(const ServiceSpec& a, const ServiceSpec& b);

}  // namespace pkit::config
