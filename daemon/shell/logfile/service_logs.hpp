#pragma once
// ServiceLogs: the owner of the services' log files (SPEC §18) beside the Daemon. It
// resolves each service's file from the tree (config::resolve_log_file, as the loader
// checked it), keeps one LogFiles entry a service slot, and takes each output line the
// Daemon's on_line hands the tail and the forwarding: no line splitting of its own.
//
//   apply()      at start, after an upgrade and after every reload or scale: every
//                service's file resolved again (a new pkitd.toml [output] counts too);
//                added, switched between two lines (LogFiles::reconfigure) or removed
//   refresh(i)   at each launch: a replacement's spec that took its slot since
//   line()       one line of a run, queued for the writer thread; never a system call
//   rotate(), reopen_all(), flush(): `pkitctl rotate`, SIGUSR1, shutdown and upgrade
//
// LogFiles and its writer thread exist only once some service has a file.

#include <uv.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <expected>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/log_file.hpp"
#include "daemon/core/supervisor.hpp"
#include "daemon/shell/logfile/log_files.hpp"
#include "daemon/shell/logfile/log_read.hpp"
#include "proto/results.hpp"
#include "proto/status.hpp"

namespace pkit::shell {

class ServiceLogs {
public:
    using Log = std::function<void(std::string_view level, const std::string& message)>;
    // A failure episode of `service`'s file began (its text is the line pkitd logs): the
    // Daemon sends the `log_error` event, whose log line is that text.
    using Failed = std::function<void(const std::string& service, const std::string& text)>;

    ServiceLogs(uv_loop_t* loop, const core::Supervisor& supervisor, std::string config_dir,
                Log log, Failed failed, std::shared_ptr<LogDisk> disk = nullptr);
    ServiceLogs(const ServiceLogs&) = delete;
    ServiceLogs& operator=(const ServiceLogs&) = delete;

    // Every slot's file resolved again from the Supervisor's tree.
    void apply();
    // `service`'s slot only, when its definition's log keys changed since (a replacement).
    void refresh(std::size_t service);
    // One line of `run` read at `wall` (unix seconds).
    void line(std::size_t service, std::uint64_t run, core::Stream stream, double wall,
              std::string_view text) {
        if (service < m_entries.size() && m_entries[service].id) {
            m_files->append(*m_entries[service].id, stream, wall, run, text);
        }
    }
    // Rotates `service`'s file after the lines queued before; false: it has none.
    bool rotate(std::size_t service);
    void reopen_all();
    // Writes what is queued, waiting at most `limit`; true when everything was written.
    bool flush(std::chrono::milliseconds limit);

    // Reads `service`'s file and its rotated files back on libuv's pool (read_back):
    // `done` gets the lines, oldest first, on the loop at a later turn, and never once
    // this owner is gone. False (`done` not called) when the service has no file.
    using ReadDone = std::function<void(std::expected<std::vector<proto::LogLine>, std::string>)>;
    bool read_back(std::size_t service, const ReadBackQuery& query, ReadDone done);

    std::optional<LogFiles::Stats> stats(std::size_t service) const;
    // Status's `log_file` (SPEC §18).
    std::optional<proto::LogFileInfo> info(std::size_t service) const;
    std::optional<config::LogFileSpec> spec(std::size_t service) const;

private:
    struct Entry {
        std::string name;  // the slot's service when the entry was made
        config::LogFileKeys keys;
        std::optional<config::LogFileSpec> spec;
        std::optional<LogFiles::Id> id;
    };
    void resolve(std::size_t service);
    void on_report(const LogFiles::Report& report);

    uv_loop_t* m_loop;
    const core::Supervisor& m_supervisor;
    std::string m_config_dir;
    Log m_log;
    Failed m_failed;
    std::shared_ptr<LogDisk> m_disk;
    std::vector<Entry> m_entries;  // by service slot
    std::unique_ptr<LogFiles> m_files;
    std::shared_ptr<bool> m_alive = std::make_shared<bool>(true);  // for read_back's done
};

}  // namespace pkit::shell
