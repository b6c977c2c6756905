// load_text() (see loader.hpp): a text loaded as the only file of a tree, without
// touching the disk, with the steps load_tree() takes for each file it reads.

#include <algorithm>

#include "config/load_steps.hpp"

namespace pkit::config {

namespace {

using namespace detail;
namespace fs = std::filesystem;

// The steps of load_tree() for a tree of this one file: DIR/pkitd.toml, or
// DIR/services/NAME.toml beside no pkitd.toml.
LoadResult load(std::string_view text, TextKind kind, const std::string& file,
                const LoadOptions& options, std::vector<Diagnostic>& diags, TableKeys* tables) {
    const fs::path path(file);
    Diags d(file, diags);
    d.note_tables(tables);
    DaemonDraft daemon;
    std::vector<ServiceDraft> services;
    std::vector<std::string> known;
    auto root = parse_text(d, text);
    if (kind == TextKind::daemon) {
        daemon.file = file;
        if (root) {
            daemon = parse_daemon(d, *root);
        }
    } else {
        daemon.file = (path.parent_path().parent_path() / "pkitd.toml").string();
        known.push_back(path.stem().string());
        if (root) {
            ServiceDraft draft = parse_service(d, *root, options);
            draft.spec.name = known.back();
            draft.spec.file = file;
            services.push_back(std::move(draft));
        }
    }
    validate_tree(services, daemon, known, diags);
    if (!diags.empty()) {
        // One file: in order of position, as load_tree() sorts each file's.
        std::ranges::stable_sort(diags, [](const Diagnostic& a, const Diagnostic& b) {
            return a.line != b.line ? a.line < b.line : a.column < b.column;
        });
        return std::unexpected(std::move(diags));
    }
    Tree tree{.dir = fs::path(daemon.file).parent_path().string(),
              .daemon = std::move(daemon.spec)};
    for (ServiceDraft& draft : services) {
        tree.services.push_back(std::move(draft.spec));
    }
    return tree;
}

// load() with its every failure as a diagnostic: load_text() never throws.
LoadResult load_noting(std::string_view text, TextKind kind, const std::string& file,
                       const LoadOptions& options, TableKeys* tables) {
    std::vector<Diagnostic> diags;
    try {
        return load(text, kind, file, options, diags, tables);
    } catch (const std::exception& e) {
        // Only resource exhaustion gets here, as in load_tree().
        diags.clear();
        diags.push_back({file, 1, 1, cat("cannot load the configuration: ", e.what())});
        return std::unexpected(std::move(diags));
    }
}

}  // namespace

LoadResult load_text(std::string_view text, TextKind kind, const std::string& file,
                     const LoadOptions& options) {
    return load_noting(text, kind, file, options, nullptr);
}

LoadResult load_text(std::string_view text, TextKind kind, const std::string& file,
                     const LoadOptions& options, TableKeys& tables) {
    return load_noting(text, kind, file, options, &tables);
}

}  // namespace pkit::config
