#pragma once
// Loads and validates a configuration tree: DIR/pkitd.toml (optional) and every
// DIR/services/*.toml in name order. Every problem is reported, positioned, in one
// pass; nothing is returned unless the whole tree is valid.
//
// Reading is bounded: only regular files, each at most k_max_file_bytes, and no
// open or read can block (see loader.cpp). Loading is linear in the number of
// services and `after`/member edges. load_tree() is thread-safe (it shares no mutable
// state), so pkitd runs it on a worker thread during a reload.

#include <cstddef>
#include <expected>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "config/model.hpp"

namespace pkit::config {

// One configuration problem. to_string() gives "FILE:LINE:COLUMN: error: MESSAGE".
struct Diagnostic {
    std::string file;
    int line = 1;
    int column = 1;
    std::string message;
    std::string to_string() const;
    bool operator==(const Diagnostic&) const = default;
};

struct LoadOptions {
    // Whether pkitd runs as root: only root may name another user/group.
    bool as_root = false;
    unsigned uid = 0;  // pkitd's own uid, to tell "another user" apart
    unsigned gid = 0;  // pkitd's own gid: without root, setgid() can only keep it
};

// The largest configuration file read (1 MiB); a bigger one is an error.
inline constexpr std::size_t k_max_file_bytes = 1024 * 1024;

using LoadResult = std::expected<Tree, std::vector<Diagnostic>>;

// Never throws for bad input: unreadable files, TOML syntax errors and invalid
// values all come back as diagnostics.
LoadResult load_tree(const std::filesystem::path& dir, const LoadOptions& options);

// Default options for this process: as_root and uid from getuid(), gid from getgid().
LoadOptions default_load_options();

// What a text given to load_text() is: pkitd.toml, or the file of one service.
enum class TextKind { daemon, service };

// One file's text loaded without touching the disk, as load_tree() would load a
// directory holding only that file: the same parsing and checks (so an `after` or a
// group member naming another service is unknown), the same diagnostics. `file` names
// the text in them; a service's name is `file`'s stem, taken as it is (load_tree()
// checks file names itself). Never throws for bad input. load_tree() parses each file
// it reads the same way; the fuzz targets (tests/fuzz/) call this.
LoadResult load_text(std::string_view text, TextKind kind, const std::string& file,
                     const LoadOptions& options);

}  // namespace pkit::config
