#pragma once
// Loads and validates a configuration tree: DIR/pkitd.toml (optional) and every
// DIR/services/*.toml in name order. Every problem is reported, positioned, in one
// pass; nothing is returned unless the whole tree is valid.
//
// Reading is bounded: only regular files, each at most k_max_file_bytes, and no
// open or read can block (see loader.cpp). Loading is linear in the number of
// services and `after`/member edges. load_tree() is thread-safe (it shares nothing
// mutable but the atomic count of ServiceSpec::stamp), so pkitd runs it on a worker
// thread during a reload.

#include <cstddef>
#include <cstdint>
#include <expected>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>
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
    // A warning (--check's undefined variables) does not make the tree invalid.
    bool warning = false;
    // "FILE:LINE:COLUMN: error: MESSAGE" ("warning: " for a warning).
    std::string to_string() const;
    bool operator==(const Diagnostic&) const = default;
};

struct LoadOptions {
    // Whether pkitd runs as root: only root may name another user/group.
    bool as_root = false;
    unsigned uid = 0;  // pkitd's own uid, to tell "another user" apart
    unsigned gid = 0;  // pkitd's own gid: without root, setgid() can only keep it
    // Where the warnings of a valid tree go (variables no known source defines, SPEC
    // §13), or nullptr for none: --check asks for them, pkitd's loads do not.
    std::vector<Diagnostic>* warnings = nullptr;
    // Where the warnings that every load reports go (SPEC §21: a start_first service
    // whose [ready] or [health] probe reaches its own [[listen]] socket), or nullptr:
    // pkitd logs them at start-up and at each reload. `warnings` gets them too.
    std::vector<Diagnostic>* load_warnings = nullptr;
};

// The largest configuration file read (1 MiB); a bigger one is an error.
inline constexpr std::size_t k_max_file_bytes = 1024 * 1024;

using LoadResult = std::expected<Tree, std::vector<Diagnostic>>;

// What load_tree() keeps of the service files it parsed, so that the next load of the
// same directory with the same options parses only the files that changed: a reload
// of 10,000 files with one edited parses one, and lists the others. The checks across
// files (validate_tree) run on every load that has any to run (an `after` or a group
// member), and pkitd.toml is read every time, so a change there is seen in full.
//
// While a ServicesWatch (inotify) has been on services/ since the last load, the
// directory is listed again only when an event named a *.toml entry (one created,
// removed or renamed is always named), and a regular file with one link on the
// directory's own device is unchanged unless an event named it: it is not even
// looked at. Any other file (a symbolic link, whose target no event
// on the directory follows; a file with other hard links; another device), and every
// file when the watch cannot tell (the first load, an overflowed or lost watch, NFS
// and other filesystems changed elsewhere), counts as unchanged when its device,
// inode, size, mtime and ctime (to the nanosecond) are as they were. The kernel stamps files from a
// clock that advances in ticks, so two writes within one tick can leave every one of those equal; a
// file is therefore reused only when its ctime was at least k_racy_seconds older than the load that
// parsed it (a "racily clean" file, as git calls it, is parsed again). A file whose parse consulted
// the account database (a user or group name checked by a pkitd that is not root) is parsed again
// every time. Any error a file had is kept with it and reported again. A load holds the cache's
// lock: one at a time.
class LoadCache {
public:
    // `wall_ns` reads the realtime clock in nanoseconds since the epoch, which the
    // kernel's file timestamps follow; tests pass another (null: clock_gettime).
    explicit LoadCache(std::function<std::int64_t()> wall_ns = {});
    ~LoadCache();
    LoadCache(const LoadCache&) = delete;
    LoadCache& operator=(const LoadCache&) = delete;

    // What the last load did with the service files: how many it listed, how many it
    // parsed, and how many it looked at (stat) to find them unchanged. The rest it knew
    // unchanged from the services watch. `listings` is 1 when it read the directory, 0
    // when no event since the load before named a *.toml file, so that load's listing
    // stood. For pkitd's log, tests and figures.
    struct Work {
        std::size_t files = 0;
        std::size_t parsed = 0;
        std::size_t checked = 0;
        std::size_t listings = 0;
    };
    Work last_work() const;

    struct State;  // loader.cpp

private:
    friend LoadResult load_tree(const std::filesystem::path&, const LoadOptions&, LoadCache*);
    std::unique_ptr<State> m_state;
};

// How much older than the load that parsed it a file's ctime must be for the next load
// to trust its identity (see LoadCache).
inline constexpr int k_racy_seconds = 2;

// Never throws for bad input: unreadable files, TOML syntax errors and invalid
// values all come back as diagnostics. With a `cache`, the files it holds unchanged
// are not parsed again (see LoadCache); the result is the same.
LoadResult load_tree(const std::filesystem::path& dir, const LoadOptions& options,
                     LoadCache* cache = nullptr);

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

// The keys the loader accepts in each table it read, by the table's dotted path (""
// for the file's top level, "restart", "groups.web"); a table whose keys are free
// (env, groups) has none. The same table read twice has its lists merged.
using TableKeys = std::map<std::string, std::set<std::string>>;
// load_text() that also notes, in `tables`, every table it read and its keys: the
// program's own list of what pkit.toml(5) must document (the docs test).
LoadResult load_text(std::string_view text, TextKind kind, const std::string& file,
                     const LoadOptions& options, TableKeys& tables);

}  // namespace pkit::config
