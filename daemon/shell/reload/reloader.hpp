#pragma once
// The owner of reloads, their previews and `scale` (SPEC §8, §13, §21): the tree read
// and checked on a worker thread (io/BackgroundLoad), applied on the loop in one go
// through its ReloadHost; `reload --dry-run` compared and dropped; the counts `scale`
// set, laid over every later tree until the file's own count changes.
//
//   reload(done) ──idle──▶ start_reload ──uv_queue_work──▶ load_tree (worker thread)
//                └─busy──▶ m_reload_next                          │
//   finish_reload ◀──after-work, on the loop──────────────────────┘
//     apply_reload: checks (ReloadHost::tree_errors, stage_sockets), scaled counts,
//     ReloadHost::apply_tree; each waiting `done`; then one read for m_reload_next

#include <uv.h>

#include <expected>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/loader.hpp"
#include "config/model.hpp"
#include "daemon/core/supervisor.hpp"
#include "daemon/shell/control/daemon_port.hpp"
#include "daemon/shell/io/background_load.hpp"
#include "daemon/shell/listen/listen_sockets.hpp"
#include "daemon/shell/upgrade/state_file.hpp"

namespace pkit::shell {

// What the Reloader asks of the daemon above it.
class ReloadHost {
public:
    virtual const core::Supervisor& supervisor() const = 0;
    virtual void log(std::string_view level, const std::string& message) = 0;
    // Logs a load's warnings, each line beginning "FILE:LINE:COL: warning:" (SPEC §21).
    virtual void log_load_warnings(const std::vector<config::Diagnostic>& warnings) = 0;
    // What `tree` cannot have with what pkitd holds beyond the files: [resources]
    // `required` that its cgroups cannot apply. Empty when nothing.
    virtual std::vector<config::Diagnostic> tree_errors(const config::Tree& tree) const = 0;
    // Binds the [[listen]] sockets `tree` adds, nothing changed yet; or every error.
    virtual std::expected<ListenSockets::Staged, std::vector<config::Diagnostic>> stage_sockets(
        const config::Tree& tree) = 0;
    // A new tree on the Supervisor and the shell around it (with `sockets`: a reload's,
    // committed), then a pump.
    virtual core::ReloadOutcome apply_tree(config::Tree tree,
                                           std::optional<ListenSockets::Staged> sockets) = 0;
    // systemd hears RELOADING=1 when a read starts (true) and READY=1 once it is
    // applied (false), whatever its outcome.
    virtual void reloading(bool started) = 0;

protected:
    ~ReloadHost() = default;
};

class Reloader {
public:
    using ReloadDone = DaemonPort::ReloadDone;
    using ReloadResult = DaemonPort::ReloadResult;
    using PreviewDone = DaemonPort::PreviewDone;
    using PreviewResult = DaemonPort::PreviewResult;

    // `config_dir` is read with `load_cache` (null: every file parsed at each reload);
    // `socket_path` is the control socket in use and `socket_from_config` whether
    // pkitd.toml named it (a reload that changes it is warned about).
    Reloader(uv_loop_t* loop, ReloadHost& host, std::string config_dir,
             std::shared_ptr<config::LoadCache> load_cache, std::string socket_path,
             bool socket_from_config);
    Reloader(const Reloader&) = delete;
    Reloader& operator=(const Reloader&) = delete;

    // Re-reads and validates the whole configuration tree (SPEC §8): the files are read
    // and checked on a libuv worker thread, then the valid tree is applied on the loop in
    // one go and `done` gets the outcome. Invalid: nothing changes and the error holds
    // every positioned problem, one a line. Logged either way. Reloads asked for while a
    // read is under way are coalesced: they share one more read, started once the
    // current one is applied, so each sees the files as they were when it was asked.
    // `done` is called from the loop, immediately when pkitd is shutting down, and never
    // after the Reloader is gone. SIGHUP calls it too.
    void reload(ReloadDone done);
    // `reload --dry-run`: a read of its own, on its own BackgroundLoad, without the
    // reload cache; previews asked for meanwhile share the next read.
    void preview(PreviewDone done);
    // SPEC §13: sets the instances of `name` to `count` by applying the running tree
    // with that count; why it could not (pkitd shutting down), or nullopt once applied.
    std::optional<std::string> scale(const std::string& name, int count);

    // A reload's read or one waiting for it (an upgrade waits for neither).
    bool busy() const { return m_loading.busy() || !m_reload_next.empty(); }
    // The upgrade's read of the configuration on disk, on the reload's BackgroundLoad.
    std::expected<void, std::string> read_for_upgrade(BackgroundLoad::Done done);
    // The counts `scale` set, as the state carries them; and taken back after an
    // upgrade, where the tree this pkitd was made with still has them.
    std::vector<upgrade::ScaledFact> scaled_facts() const;
    void resume(const upgrade::DaemonFacts& facts);

private:
    void start_reload(std::vector<ReloadDone> waiting);
    void finish_reload(config::LoadResult tree, const std::vector<ReloadDone>& waiting,
                       const std::vector<config::Diagnostic>& warnings);
    ReloadResult apply_reload(config::LoadResult tree);
    void start_preview(std::vector<PreviewDone> waiting);
    PreviewResult preview_tree(config::LoadResult tree);
    // The running tree, and a loaded tree with the counts `scale` set wherever the
    // file's own `instances` is still what it was then.
    config::Tree running_tree() const;
    void keep_scaled_counts(config::Tree& tree);

    uv_loop_t* m_loop;
    ReloadHost& m_host;
    std::string m_config_dir;
    std::shared_ptr<config::LoadCache> m_load_cache;
    std::string m_socket_path;
    bool m_socket_from_config;
    // SPEC §13: the instance counts `scale` set, by file name, with the file's own count
    // at the time; a reload that finds the file's count changed drops the entry.
    struct Scaled {
        std::size_t file_count = 0;
        std::size_t count = 0;
    };
    std::map<std::string, Scaled, std::less<>> m_scaled;
    // Reloads asked for while m_loading reads: served by the next read.
    std::vector<ReloadDone> m_reload_next;
    // Previews asked for while m_previewing reads: served by the next read.
    std::vector<PreviewDone> m_preview_next;
    // The reload's read in the background; last, so that it is detached first.
    BackgroundLoad m_loading{m_loop};
    // `reload --dry-run`'s read, apart from the reload's.
    BackgroundLoad m_previewing{m_loop};
};

}  // namespace pkit::shell
