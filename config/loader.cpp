// load_tree(): reads the files in order, parses each into a draft, checks the drafts
// together, and returns the tree only when nothing at all was wrong.
//
// Decisions (also in man/pkit.toml.5): a missing or unreadable DIR is an error at
// "DIR:1:1"; a missing DIR/pkitd.toml means all daemon defaults; a missing
// DIR/services directory, or a `services` link to nothing, is an error at
// DIR/services:1:1 (almost always a wrong --config: pkitd must not run with nothing),
// while an empty one is a tree with no services. Entries of services/ are taken in
// byte order of their names; those not ending in ".toml" are skipped.
//
// Only regular files of at most k_max_file_bytes are read: a FIFO, a device, a
// directory named x.toml or a bigger file is an error at FILE:1:1, found by fstat()
// on a descriptor opened without blocking, before anything is read. Any failure to
// read DIR or DIR/services (a symlink loop, not a directory, no permission) is an
// error naming the directory and the reason.

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "config/load_steps.hpp"
#include "config/log_file.hpp"
#include "config/program_lookup.hpp"
#include "config/services_watch.hpp"
#include "config/toml_depth.hpp"

namespace pkit::config {

std::string Diagnostic::to_string() const {
    return file + ":" + std::to_string(line) + ":" + std::to_string(column) +
           (warning ? ": warning: " : ": error: ") + message;
}

LoadOptions default_load_options() {
    return LoadOptions{.as_root = getuid() == 0, .uid = getuid(), .gid = getgid()};
}

namespace detail {

bool valid_name(std::string_view name) {
    auto alnum = [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    };
    if (name.empty() || name.size() > 64 || !alnum(name.front())) {
        return false;
    }
    return std::ranges::all_of(
        name, [&](char c) { return alnum(c) || c == '_' || c == '.' || c == '-'; });
}

}  // namespace detail

namespace {

using namespace detail;
namespace fs = std::filesystem;

// errno as text. strerror() may share a buffer between threads; the loader runs on
// a worker thread during a reload.
std::string errno_text(int error) {
    char buffer[256];
    return ::strerror_r(error, buffer, sizeof buffer);  // GNU: returns the text
}

// What a file that is not a regular file is, for the error message.
std::string_view kind_of(mode_t mode) {
    if (S_ISDIR(mode)) {
        return "a directory";
    }
    if (S_ISFIFO(mode)) {
        return "a FIFO";
    }
    if (S_ISCHR(mode)) {
        return "a character device";
    }
    if (S_ISBLK(mode)) {
        return "a block device";
    }
    if (S_ISSOCK(mode)) {
        return "a socket";
    }
    return "an unknown kind of file";
}

// kind_of(), which also names a regular file.
std::string_view kind_of_any(mode_t mode) {
    return S_ISREG(mode) ? "a regular file" : kind_of(mode);
}

// Closes a descriptor when it goes out of scope.
struct Fd {
    int fd = -1;
    explicit Fd(int f) : fd(f) {}
    ~Fd() {
        if (fd >= 0) {
            ::close(fd);
        }
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
};

// Reads `name` under the directory `at`: only a regular file, only up to
// k_max_file_bytes. The open never blocks (O_NONBLOCK: a FIFO with no writer, a
// terminal), and nothing is read before fstat() has said it is a regular file.
// `info` is the file's fstat(), when it got that far.
std::optional<std::string> read_whole(int at, const std::string& name, std::string& error,
                                      struct stat& info) {
    Fd file(::openat(at, name.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
    if (file.fd < 0) {
        error = cat("cannot read the file: ", errno_text(errno));
        return std::nullopt;
    }
    if (::fstat(file.fd, &info) != 0) {
        error = cat("cannot read the file: ", errno_text(errno));
        return std::nullopt;
    }
    if (!S_ISREG(info.st_mode)) {
        error =
            cat("not a regular file (", kind_of(info.st_mode), "): only regular files are read");
        return std::nullopt;
    }
    auto too_big = [&](std::uint64_t size) {
        return cat("the file is ", std::to_string(size), " bytes, over the limit of ",
                   std::to_string(k_max_file_bytes), " bytes (1 MiB)");
    };
    if (static_cast<std::uint64_t>(info.st_size) > k_max_file_bytes) {
        error = too_big(static_cast<std::uint64_t>(info.st_size));
        return std::nullopt;
    }
    std::string content;
    char buffer[65536];
    for (;;) {
        ssize_t n = ::read(file.fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            error = cat("cannot read the file: ", errno_text(errno));
            return std::nullopt;
        }
        if (n == 0) {
            break;
        }
        content.append(buffer, static_cast<std::size_t>(n));
        if (content.size() > k_max_file_bytes) {  // it grew after fstat()
            error = too_big(content.size());
            return std::nullopt;
        }
    }
    return content;
}

// toml++ says "Error while parsing key-value pair: ..."; keep its detail, in the
// lower-case style of the other messages.
std::string syntax_message(std::string_view description) {
    constexpr std::string_view prefix = "Error while parsing ";
    if (description.starts_with(prefix)) {
        description.remove_prefix(prefix.size());
        return cat("invalid TOML while parsing ", description);
    }
    return cat("invalid TOML: ", description);
}

std::optional<toml::table> parse_file(const Diags& d, int at, const std::string& name,
                                      struct stat& info) {
    std::string error;
    auto content = read_whole(at, name, error, info);
    if (!content) {
        d.error(Pos{}, error);
        return std::nullopt;
    }
    return parse_text(d, *content);
}

// A file of DIR/services as listed: `regular` when the listing says it is a regular file
// (not a link, whose target no event on the directory would follow).
struct Listed {
    std::string name;
    bool regular = false;
};

// The error for a services directory that is not there: a link to nothing is named
// with its target. An empty directory is the way to say "no services".
void missing(int dir_fd, const std::string& where, std::vector<Diagnostic>& out) {
    char target[4096];
    ssize_t length = ::readlinkat(dir_fd, "services", target, sizeof target - 1);
    std::string what = length >= 0
                           ? cat("a symbolic link to ",
                                 quote(std::string_view(target, static_cast<std::size_t>(length))),
                                 ", which does not exist")
                           : std::string("no such directory");
    Diags(where, out)
        .error(Pos{}, cat("cannot read the services directory: ", what,
                          " (is the configuration directory right? an empty services "
                          "directory means no services)"));
}

void cannot_read_services(const fs::path& dir, int error, std::vector<Diagnostic>& out) {
    Diags((dir / "services").string(), out)
        .error(Pos{}, cat("cannot read the services directory: ", errno_text(error)));
}

// DIR/services opened into `services_fd`. Any failure (missing, a dangling link, a
// symlink loop, not a directory, no permission) is an error at DIR/services:1:1.
bool open_services(int dir_fd, const fs::path& dir, Fd& services_fd, std::vector<Diagnostic>& out) {
    services_fd.fd = ::openat(dir_fd, "services", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (services_fd.fd >= 0) {
        return true;
    }
    if (errno == ENOENT) {
        missing(dir_fd, (dir / "services").string(), out);
    } else {
        cannot_read_services(dir, errno, out);
    }
    return false;
}

// The names of the open DIR/services' *.toml in byte order; a read error is an error
// at DIR/services:1:1.
std::optional<std::vector<Listed>> service_files(const Fd& services_fd, const fs::path& dir,
                                                 std::vector<Diagnostic>& out) {
    auto fail = [&](int error) {
        cannot_read_services(dir, error, out);
        return std::nullopt;
    };
    // fdopendir() takes the descriptor it is given; the listing gets a copy of its own.
    int listing_fd = ::dup(services_fd.fd);
    if (listing_fd < 0) {
        return fail(errno);
    }
    DIR* listing = ::fdopendir(listing_fd);
    if (listing == nullptr) {
        int error = errno;
        ::close(listing_fd);
        return fail(error);
    }
    std::vector<Listed> files;
    int error = 0;
    for (;;) {
        errno = 0;
        const dirent* entry = ::readdir(listing);
        if (entry == nullptr) {
            error = errno;
            break;
        }
        std::string_view name = entry->d_name;
        if (name.ends_with(".toml")) {
            files.push_back(Listed{std::string(name), entry->d_type == DT_REG});
        }
    }
    ::closedir(listing);
    if (error != 0) {
        return fail(error);
    }
    std::ranges::sort(files, {}, &Listed::name);
    return files;
}

}  // namespace

// --- The cache of parsed service files ----------------------------------------------

namespace {

// The numbers of ServiceSpec::stamp, shared by every load of the process: a cache made
// afresh must not give a number a running spec already has.
std::atomic<std::uint64_t> next_stamp{0};

// What tells one version of a file from another without reading it.
struct FileIdentity {
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = 0;
    std::int64_t mtime_ns = 0;
    std::int64_t ctime_ns = 0;
    bool operator==(const FileIdentity&) const = default;
};

std::int64_t nanoseconds(const timespec& t) {
    return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

// The realtime clock, which the kernel's file timestamps follow.
std::int64_t wall_now_ns() {
    timespec now{};
    ::clock_gettime(CLOCK_REALTIME, &now);
    return nanoseconds(now);
}

FileIdentity identity_of(const struct stat& info) {
    return {info.st_dev, info.st_ino, info.st_size, nanoseconds(info.st_mtim),
            nanoseconds(info.st_ctim)};
}

// One service file as a load parsed it: its draft (none when it did not parse) and
// every diagnostic of its own, both given again while the file stays the same.
struct CachedFile {
    std::string file_name;
    FileIdentity identity;
    // The services watch tells of its changes (ServicesWatch::covers when parsed): while
    // no event names it, it is the same file without a look.
    bool watched = false;
    std::optional<ServiceDraft> draft;
    std::vector<Diagnostic> diags;
};

}  // namespace

struct LoadCache::State {
    std::mutex mutex;
    std::function<std::int64_t()> wall_ns;
    // What the entries were parsed for: another directory or other options empty it.
    std::string dir;
    LoadOptions options;
    std::vector<std::unique_ptr<CachedFile>> files;  // in the byte order of their names
    // The last load's listing of services/, read after the watch's events were taken:
    // while no event names a *.toml since, it is the directory's listing still.
    std::optional<std::vector<Listed>> listing;
    ServicesWatch watch;
    LoadCache::Work last;
};

LoadCache::LoadCache(std::function<std::int64_t()> wall_ns) : m_state(std::make_unique<State>()) {
    m_state->wall_ns = wall_ns ? std::move(wall_ns) : wall_now_ns;
}
LoadCache::~LoadCache() = default;

LoadCache::Work LoadCache::last_work() const {
    std::lock_guard lock(m_state->mutex);
    return m_state->last;
}

namespace {

// Whether `entry` still holds the file `listed`: no event named it since, when the
// watch covers it (`changed` is null when the watch cannot tell), else the same
// identity, after which the watch covers it or not as the look says. Counts the files
// it had to look at in `work`.
bool unchanged(CachedFile& entry, const Listed& listed,
               const std::unordered_set<std::string>* changed, const ServicesWatch& watch,
               int services_fd, LoadCache::Work& work) {
    if (changed != nullptr && entry.watched && listed.regular) {
        return !changed->contains(listed.name);
    }
    ++work.checked;
    struct stat info {};
    if (::fstatat(services_fd, listed.name.c_str(), &info, 0) != 0 || !S_ISREG(info.st_mode) ||
        identity_of(info) != entry.identity) {
        return false;
    }
    entry.watched = listed.regular && watch.covers(info.st_dev, info.st_nlink);
    return true;
}

// Whether a parse of a file with this identity may be reused by the next load that
// finds the same identity: its ctime is older than `began` (this load's start) by
// k_racy_seconds, so any later write gets another ctime; and the parse consulted
// nothing but the file (no account lookup, see parse_user_group).
bool reusable(const FileIdentity& identity, std::int64_t began, const ServiceDraft* draft,
              const LoadOptions& options) {
    if (identity.ctime_ns > began - std::int64_t{k_racy_seconds} * 1'000'000'000) {
        return false;
    }
    if (draft != nullptr && !options.as_root) {
        const ProcessSpec& process = *draft->spec.process;
        return !process.user.name && !process.group.name;
    }
    return true;
}

std::string bad_name_message(std::string_view file_name) {
    return cat(quote(file_name),
               ": the file name without \".toml\" is not a valid service name (1 to 64 letters, "
               "digits, \"_\", \".\" or \"-\", starting with a letter or digit)");
}

// Diagnostics in the order the files were read, then by position.
void sort_diagnostics(std::vector<Diagnostic>& diags, const std::vector<std::string>& files) {
    std::unordered_map<std::string_view, std::size_t> ranks;
    for (std::size_t i = 0; i < files.size(); ++i) {
        ranks.emplace(files[i], i);
    }
    auto rank = [&](const Diagnostic& diag) {
        auto it = ranks.find(diag.file);
        // files.size() (last) for the directories themselves
        return it == ranks.end() ? files.size() : it->second;
    };
    std::ranges::stable_sort(diags, [&](const Diagnostic& a, const Diagnostic& b) {
        auto ra = rank(a);
        auto rb = rank(b);
        if (ra != rb) {
            return ra < rb;
        }
        return a.line != b.line ? a.line < b.line : a.column < b.column;
    });
}

// The files' own warnings (ServiceDraft::warnings), once a file even when it has
// instances, into both sinks of `options`.
void report_load_warnings(const std::vector<ServiceDraft>& services, const LoadOptions& options) {
    for (const ServiceDraft& draft : services) {
        if (draft.warnings.empty() || draft.spec.instance > 1) {
            continue;
        }
        std::vector<Diagnostic>* other =
            options.load_warnings != options.warnings ? options.load_warnings : nullptr;
        for (std::vector<Diagnostic>* sink : {options.warnings, other}) {
            if (sink != nullptr) {
                sink->insert(sink->end(), draft.warnings.begin(), draft.warnings.end());
            }
        }
    }
}

// `cache` (locked by the caller) gives the unchanged files' parses and gets this load's.
// SPEC §18: each service's log file, as pkitd would open it. An error at the service's
// `file` value when it names one, else at pkitd.toml's [output] dir: a variable that
// pkitd's environment and [env] do not define, a path that exists and is not a regular
// file (a directory, FIFO, device or socket: stat() follows a symbolic link, as the
// open would), a log directory that is not a directory, and two services writing one
// file (their rotations would rename each other's lines away).
void check_log_files(const fs::path& dir, const std::vector<ServiceDraft>& services,
                     const DaemonDraft& daemon, std::vector<Diagnostic>& diags) {
    const DaemonOutputSpec& output = daemon.spec.output;
    if (output.dir) {
        fs::path log_dir =
            fs::path(*output.dir).is_relative() ? dir / *output.dir : fs::path(*output.dir);
        struct stat info {};
        if (::stat(log_dir.c_str(), &info) == 0 && !S_ISDIR(info.st_mode)) {
            Diags(daemon.file, diags)
                .error(daemon.output_dir_pos, cat("output.dir: ", quote(log_dir.string()), " is ",
                                                  kind_of_any(info.st_mode), ", not a directory"));
            return;  // every service's file would be reported under it again
        }
    }
    auto process_env = [](std::string_view name) -> std::optional<std::string_view> {
        const char* value = std::getenv(std::string(name).c_str());
        return value != nullptr ? std::optional<std::string_view>(value) : std::nullopt;
    };
    std::unordered_map<std::string, std::string_view> owners;  // path -> service
    for (const ServiceDraft& draft : services) {
        const ServiceSpec& spec = draft.spec;
        bool own = draft.spec.output.log->path.has_value();
        if (own && check_variables(*spec.output.log->path)) {
            continue;  // its syntax error is reported at the value already
        }
        auto at = [&](std::string message) {
            if (own) {
                Diags(spec.file, diags).error(draft.log_file_pos, std::move(message));
            } else {
                Diags(daemon.file, diags)
                    .error(daemon.output_dir_pos,
                           cat(message, " (the log file of ", spec.name, " under [output] dir)"));
            }
        };
        auto log = resolve_log_file(spec, daemon.spec, dir.string(),
                                    log_file_variables(spec, daemon.spec, process_env));
        if (!log) {
            at(std::move(log.error()));
            continue;
        }
        if (!*log) {
            continue;
        }
        const std::string& path = (*log)->path;
        struct stat info {};
        if (::stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode)) {
            at(cat(own ? "output.file: " : "output.dir: ", quote(path), " is ",
                   kind_of_any(info.st_mode), ", not a regular file"));
            continue;
        }
        auto [it, added] = owners.emplace(path, spec.name);
        if (!added) {
            at(cat(own ? "output.file: " : "output.dir: ", quote(path),
                   " is already the log file of ", it->second));
        }
    }
}

LoadResult load(const fs::path& dir, const LoadOptions& options, std::vector<Diagnostic>& diags,
                LoadCache::State* cache) {
    // Before any stat of this load.
    const std::int64_t began = cache != nullptr ? cache->wall_ns() : 0;
    std::vector<std::unique_ptr<CachedFile>> old;
    std::vector<std::unique_ptr<CachedFile>> kept;
    std::optional<std::vector<Listed>> listing_before;
    if (cache != nullptr) {
        const LoadOptions& was = cache->options;
        if (cache->dir == dir.string() && was.as_root == options.as_root &&
            was.uid == options.uid && was.gid == options.gid) {
            old.swap(cache->files);
            listing_before = std::move(cache->listing);
        }
        kept.reserve(old.size());
        cache->files.clear();
        cache->listing.reset();
        cache->dir = dir.string();
        cache->options = options;
        cache->last = {};
    }
    // O_PATH: only search permission is needed on DIR, as for any path under it.
    Fd dir_fd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (dir_fd.fd < 0) {
        diags.push_back({dir.string(), 1, 1,
                         cat("cannot read the configuration directory: ", errno_text(errno))});
        return std::unexpected(std::move(diags));
    }
    std::vector<std::string> files;

    DaemonDraft daemon;
    daemon.file = (dir / "pkitd.toml").string();
    files.push_back(daemon.file);
    struct stat link_info {};
    if (::fstatat(dir_fd.fd, "pkitd.toml", &link_info, AT_SYMLINK_NOFOLLOW) == 0) {
        Diags d(daemon.file, diags);
        struct stat info {};
        if (auto root = parse_file(d, dir_fd.fd, "pkitd.toml", info)) {
            daemon = parse_daemon(d, *root);
        }
    } else if (errno != ENOENT) {  // EACCES on DIR, say: not "no pkitd.toml"
        diags.push_back({dir.string(), 1, 1,
                         cat("cannot read the configuration directory: ", errno_text(errno))});
        return std::unexpected(std::move(diags));
    }

    std::vector<ServiceDraft> services;
    std::vector<std::string> known;
    services.reserve(old.size());
    known.reserve(old.size());
    Fd services_fd(-1);
    std::vector<Listed> listing;
    bool listed_all = false;  // `listing` is the directory's whole listing
    // The events are taken before the directory is listed and any file looked at: a
    // change from here on is an event for the next load. With none naming a *.toml
    // file, the listing is the last load's.
    std::optional<std::unordered_set<std::string>> changed;
    if (open_services(dir_fd.fd, dir, services_fd, diags)) {
        if (cache != nullptr) {
            changed = cache->watch.changes(services_fd.fd);
        }
        if (changed && changed->empty() && listing_before) {
            listing = std::move(*listing_before);
            listed_all = true;
        } else if (auto listed = service_files(services_fd, dir, diags)) {
            listing = std::move(*listed);
            listed_all = true;
            if (cache != nullptr) {
                ++cache->last.listings;
            }
        }
    }
    if (cache != nullptr) {
        cache->last.files = listing.size();
    }
    auto next_old = old.begin();  // old and listing are both in byte order
    // Joined as strings: a path built per file costs more than its parse at 10,000.
    const std::string services_dir = (dir / "services").string() + '/';
    for (const Listed& listed : listing) {
        const std::string& file_name = listed.name;
        std::string name = file_name.substr(0, file_name.size() - std::string_view(".toml").size());
        bool name_ok = valid_name(name);
        if (!name_ok) {
            Diags(services_dir + file_name, diags).error(Pos{}, bad_name_message(file_name));
        } else {
            known.push_back(name);
        }
        std::unique_ptr<CachedFile> entry;
        if (cache != nullptr) {
            while (next_old != old.end() && (*next_old)->file_name < file_name) {
                ++next_old;
            }
            if (next_old != old.end() && (*next_old)->file_name == file_name) {
                std::unique_ptr<CachedFile> candidate = std::move(*next_old++);
                if (unchanged(*candidate, listed, changed ? &*changed : nullptr, cache->watch,
                              services_fd.fd, cache->last)) {
                    entry = std::move(candidate);
                }
            }
        }
        if (!entry) {
            entry = std::make_unique<CachedFile>();
            entry->file_name = file_name;
            std::string file = services_dir + file_name;
            Diags own(file, entry->diags);
            struct stat info {};
            if (auto root = parse_file(own, services_fd.fd, file_name, info)) {
                entry->draft = parse_service(own, *root, options);
                entry->draft->spec.name = name;
                entry->draft->spec.file = file;
                entry->draft->spec.stamp.number = next_stamp.fetch_add(1) + 1;
            }
            entry->identity = identity_of(info);
            if (info.st_ino == 0 || !reusable(entry->identity, began,
                                              entry->draft ? &*entry->draft : nullptr, options)) {
                entry->identity = {};  // never equal to a file's: parsed again next time
            }
            if (cache != nullptr) {
                ++cache->last.parsed;
                entry->watched = listed.regular && cache->watch.covers(info.st_dev, info.st_nlink);
            }
        }
        diags.insert(diags.end(), entry->diags.begin(), entry->diags.end());
        if (entry->draft && name_ok) {
            services.push_back(cache != nullptr ? *entry->draft : std::move(*entry->draft));
        }
        if (cache != nullptr && entry->identity != FileIdentity{}) {
            kept.push_back(std::move(entry));
        }
    }
    if (cache != nullptr) {
        cache->files = std::move(kept);
    }
    auto keep_listing = [&] {
        if (cache != nullptr && listed_all) {
            cache->listing = std::move(listing);
        }
    };

    expand_instances(services, daemon, known);
    validate_tree(services, daemon, known, diags);
    check_log_files(dir, services, daemon, diags);
    if (!diags.empty()) {
        for (const Listed& listed : listing) {
            files.push_back(services_dir + listed.name);
        }
        sort_diagnostics(diags, files);
        keep_listing();
        return std::unexpected(std::move(diags));
    }
    keep_listing();
    if (options.warnings != nullptr) {
        for (const ServiceDraft& draft : services) {
            warn_undefined_variables(draft, daemon.spec, *options.warnings);
            warn_missing_program(draft, daemon.spec, *options.warnings);
        }
    }
    report_load_warnings(services, options);
    restore_written_names(services, daemon);
    Tree tree{.dir = dir.string(), .daemon = std::move(daemon.spec)};
    tree.services.reserve(services.size());
    for (ServiceDraft& draft : services) {
        tree.services.push_back(std::move(draft.spec));
    }
    return tree;
}

}  // namespace

LoadResult load_tree(const std::filesystem::path& dir, const LoadOptions& options,
                     LoadCache* cache) {
    std::vector<Diagnostic> diags;
    std::unique_lock<std::mutex> lock;
    LoadCache::State* state = nullptr;
    if (cache != nullptr) {
        state = cache->m_state.get();
        lock = std::unique_lock<std::mutex>(state->mutex);
    }
    try {
        return load(dir, options, diags, state);
    } catch (const std::exception& e) {
        if (state != nullptr) {
            state->files.clear();  // half a load's entries: start again next time
            state->listing.reset();
        }
        // Only resource exhaustion gets here (bad_alloc, a filesystem error we did not
        // foresee); it is still reported the usual way rather than thrown at pkitd.
        diags.push_back({dir.string(), 1, 1, cat("cannot load the configuration: ", e.what())});
        return std::unexpected(std::move(diags));
    }
}

// Also what load_text() parses a text with (load_text.cpp). A text nested too deep is
// refused before toml++ reads it: toml++ would recurse as deep (toml_depth.hpp).
std::optional<toml::table> detail::parse_text(const Diags& d, std::string_view text) {
    if (auto deep = toml_too_deep(text)) {
        d.error(Pos{deep->line, deep->column},
                cat("nested more than ", std::to_string(k_max_toml_depth),
                    " deep (each part of a table's name or of a dotted key, and each array, "
                    "is one level)"));
        return std::nullopt;
    }
    try {
        return toml::parse(text, d.file());
    } catch (const toml::parse_error& e) {
        const auto& begin = e.source().begin;
        Pos pos{static_cast<int>(std::max(begin.line, 1u)),
                static_cast<int>(std::max(begin.column, 1u))};
        d.error(pos, syntax_message(e.description()));
        return std::nullopt;
    }
}

}  // namespace pkit::config
