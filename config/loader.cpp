// load_tree(): reads the files in order, parses each into a draft, checks the drafts
// together, and returns the tree only when nothing at all was wrong.
//
// Decisions (also in man/pkit.toml.5): a missing or unreadable DIR is an error at
// "DIR:1:1"; a missing DIR/pkitd.toml means all daemon defaults; a missing
// DIR/services directory is a tree with no services (a daemon can be started
// before its services are installed). Entries of services/ are taken in byte order
// of their names; those not ending in ".toml" are skipped.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "config/load_steps.hpp"

namespace pkit::config {

std::string Diagnostic::to_string() const {
    return file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": error: " + message;
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

std::optional<std::string> read_whole(const fs::path& path, std::string& error) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        error = std::strerror(errno);
        return std::nullopt;
    }
    struct stat info {};
    if (::fstat(fd, &info) == 0 && S_ISDIR(info.st_mode)) {
        ::close(fd);
        error = std::strerror(EISDIR);
        return std::nullopt;
    }
    std::string content;
    char buffer[65536];
    for (;;) {
        ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            error = std::strerror(errno);
            ::close(fd);
            return std::nullopt;
        }
        if (n == 0) {
            break;
        }
        content.append(buffer, static_cast<std::size_t>(n));
    }
    ::close(fd);
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

std::optional<toml::table> parse_file(const Diags& d, const fs::path& path) {
    std::string error;
    auto content = read_whole(path, error);
    if (!content) {
        d.error(Pos{}, cat("cannot read the file: ", error));
        return std::nullopt;
    }
    return parse_text(d, *content);
}

std::vector<fs::path> service_files(const fs::path& dir, std::vector<Diagnostic>& out) {
    fs::path services = dir / "services";
    std::error_code ec;
    auto status = fs::status(services, ec);
    if (fs::is_directory(status)) {
        fs::directory_iterator it(services, ec);
        std::vector<fs::path> files;
        for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
            if (it->path().filename().string().ends_with(".toml")) {
                files.push_back(it->path().filename());
            }
        }
        std::ranges::sort(files);
        if (!ec) {
            return files;
        }
    } else if (!fs::exists(status)) {
        return {};
    }
    std::string why = ec ? ec.message() : std::strerror(ENOTDIR);
    Diags(services.string(), out).error(Pos{}, cat("cannot read the services directory: ", why));
    return {};
}

}  // namespace

namespace {

std::string bad_name_message(std::string_view file_name) {
    return cat(quote(file_name),
               ": the file name without \".toml\" is not a valid service name (1 to 64 letters, "
               "digits, \"_\", \".\" or \"-\", starting with a letter or digit)");
}

// Diagnostics in the order the files were read, then by position.
void sort_diagnostics(std::vector<Diagnostic>& diags, const std::vector<std::string>& files) {
    auto rank = [&](const Diagnostic& diag) {
        auto it = std::ranges::find(files, diag.file);
        return it - files.begin();  // files.size() (last) for the directories themselves
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

LoadResult load(const fs::path& dir, const LoadOptions& options, std::vector<Diagnostic>& diags) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
        std::string why = fs::exists(dir, ec) ? std::strerror(ENOTDIR) : std::strerror(ENOENT);
        diags.push_back(
            {dir.string(), 1, 1, cat("cannot read the configuration directory: ", why)});
        return std::unexpected(std::move(diags));
    }
    std::vector<std::string> files;

    DaemonDraft daemon;
    daemon.file = (dir / "pkitd.toml").string();
    files.push_back(daemon.file);
    if (fs::exists(fs::symlink_status(dir / "pkitd.toml", ec))) {
        Diags d(daemon.file, diags);
        if (auto root = parse_file(d, dir / "pkitd.toml")) {
            daemon = parse_daemon(d, *root);
        }
    }

    std::vector<ServiceDraft> services;
    std::vector<std::string> known;
    for (const fs::path& file_name : service_files(dir, diags)) {
        std::string file = (dir / "services" / file_name).string();
        files.push_back(file);
        std::string name = file_name.stem().string();
        Diags d(file, diags);
        bool name_ok = valid_name(name);
        if (!name_ok) {
            d.error(Pos{}, bad_name_message(file_name.string()));
        } else {
            known.push_back(name);
        }
        auto root = parse_file(d, dir / "services" / file_name);
        if (!root) {
            continue;
        }
        ServiceDraft draft = parse_service(d, *root, options);
        draft.spec.name = name;
        draft.spec.file = file;
        if (name_ok) {
            services.push_back(std::move(draft));
        }
    }

    validate_tree(services, daemon, known, diags);
    if (!diags.empty()) {
        sort_diagnostics(diags, files);
        return std::unexpected(std::move(diags));
    }
    Tree tree{.dir = dir.string(), .daemon = std::move(daemon.spec)};
    for (ServiceDraft& draft : services) {
        tree.services.push_back(std::move(draft.spec));
    }
    return tree;
}

}  // namespace

LoadResult load_tree(const std::filesystem::path& dir, const LoadOptions& options) {
    std::vector<Diagnostic> diags;
    try {
        return load(dir, options, diags);
    } catch (const std::exception& e) {
        // Only resource exhaustion gets here (bad_alloc, a filesystem error we did not
        // foresee); it is still reported the usual way rather than thrown at pkitd.
        diags.push_back({dir.string(), 1, 1, cat("cannot load the configuration: ", e.what())});
        return std::unexpected(std::move(diags));
    }
}

// Also what load_text() parses a text with (load_text.cpp).
std::optional<toml::table> detail::parse_text(const Diags& d, std::string_view text) {
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
