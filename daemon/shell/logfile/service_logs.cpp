// ServiceLogs: which file each service slot writes, kept in step with the tree.

#include "daemon/shell/logfile/service_logs.hpp"

#include <cstdlib>

namespace pkit::shell {

namespace {

std::optional<std::string_view> process_env(std::string_view name) {
    const char* value = std::getenv(std::string(name).c_str());
    return value != nullptr ? std::optional<std::string_view>(value) : std::nullopt;
}

}  // namespace

ServiceLogs::ServiceLogs(uv_loop_t* loop, const core::Supervisor& supervisor,
                         std::string config_dir, Log log, Failed failed,
                         std::shared_ptr<LogDisk> disk)
    : m_loop(loop),
      m_supervisor(supervisor),
      m_config_dir(std::move(config_dir)),
      m_log(std::move(log)),
      m_failed(std::move(failed)),
      m_disk(disk ? std::move(disk) : std::make_shared<PosixLogDisk>()) {}

void ServiceLogs::apply() {
    const std::size_t n = m_supervisor.size();
    if (m_entries.size() < n) {
        m_entries.resize(n);
    }
    for (std::size_t i = 0; i < m_entries.size(); ++i) {
        resolve(i);
    }
}

void ServiceLogs::refresh(std::size_t service) {
    if (service >= m_supervisor.size()) {
        return;
    }
    if (m_entries.size() <= service) {
        m_entries.resize(service + 1);
    }
    const core::Service& s = m_supervisor.service(service);
    const Entry& entry = m_entries[service];
    if (entry.name != s.name() || entry.keys != *s.spec().output.log) {
        resolve(service);
    }
}

void ServiceLogs::resolve(std::size_t service) {
    Entry& entry = m_entries[service];
    std::optional<config::LogFileSpec> spec;
    std::string name;
    if (service < m_supervisor.size() && !m_supervisor.retired(service)) {
        const core::Service& s = m_supervisor.service(service);
        name = s.name();
        entry.keys = *s.spec().output.log;
        const config::DaemonSpec& daemon = m_supervisor.daemon_spec();
        auto resolved =
            config::resolve_log_file(s.spec(), daemon, m_config_dir,
                                     config::log_file_variables(s.spec(), daemon, process_env));
        if (resolved) {
            spec = std::move(*resolved);
        } else {
            // The loader checked this very resolution; the environment may have changed.
            m_log("warning", name + ": " + resolved.error() + "; no log file");
        }
    }
    if (entry.id && (!spec || name != entry.name)) {
        m_files->remove(*entry.id);
        entry.id.reset();
        entry.spec.reset();
    }
    entry.name = std::move(name);
    if (!spec) {
        return;
    }
    if (entry.id) {
        if (*entry.spec != *spec) {
            m_files->reconfigure(*entry.id, *spec);
            entry.spec = std::move(spec);
        }
        return;
    }
    if (!m_files) {
        m_files = std::make_unique<LogFiles>(
            m_loop, [this](const LogFiles::Report& report) { on_report(report); }, m_disk);
    }
    entry.id = m_files->add(entry.name, *spec);
    entry.spec = std::move(spec);
}

void ServiceLogs::on_report(const LogFiles::Report& report) {
    if (report.kind == LogFiles::Report::Kind::recovered) {
        m_log("info", report.text());
        return;
    }
    m_failed(report.service, report.text());
}

bool ServiceLogs::rotate(std::size_t service) {
    if (service >= m_entries.size() || !m_entries[service].id) {
        return false;
    }
    m_files->rotate(*m_entries[service].id);
    return true;
}

void ServiceLogs::reopen_all() {
    if (m_files) {
        m_files->reopen_all();
    }
}

bool ServiceLogs::flush(std::chrono::milliseconds limit) {
    return !m_files || m_files->flush(limit);
}

namespace {

struct ReadWork {
    uv_work_t request{};
    config::LogFileSpec spec;
    ReadBackQuery query;
    std::expected<std::vector<ParsedLine>, std::string> lines;
    ServiceLogs::ReadDone done;
    std::weak_ptr<bool> alive;
};

}  // namespace

bool ServiceLogs::read_back(std::size_t service, const ReadBackQuery& query, ReadDone done) {
    if (service >= m_entries.size() || !m_entries[service].spec) {
        return false;
    }
    auto work = std::make_unique<ReadWork>();
    work->spec = *m_entries[service].spec;
    work->query = query;
    work->done = std::move(done);
    work->alive = m_alive;
    work->request.data = work.get();
    int queued = uv_queue_work(
        m_loop, &work->request,
        [](uv_work_t* request) {
            auto* w = static_cast<ReadWork*>(request->data);
            w->lines = shell::read_back(w->spec, w->query);
        },
        [](uv_work_t* request, int status) {
            std::unique_ptr<ReadWork> w(static_cast<ReadWork*>(request->data));
            if (w->alive.expired()) {
                return;
            }
            if (status != 0) {
                w->done(
                    std::unexpected(std::string("reading the log file: ") + uv_strerror(status)));
                return;
            }
            if (!w->lines) {
                w->done(std::unexpected(std::move(w->lines.error())));
                return;
            }
            std::vector<proto::LogLine> out;
            out.reserve(w->lines->size());
            for (ParsedLine& line : *w->lines) {
                out.push_back(proto::LogLine{std::string(core::to_string(line.stream)),
                                             std::move(line.text), line.at});
            }
            w->done(std::move(out));
        });
    if (queued != 0) {
        return false;  // never read on the loop: the tail alone answers
    }
    (void)work.release();  // the after-work callback owns it
    return true;
}

std::optional<LogFiles::Stats> ServiceLogs::stats(std::size_t service) const {
    if (service >= m_entries.size() || !m_entries[service].id) {
        return std::nullopt;
    }
    return m_files->stats(*m_entries[service].id);
}

std::optional<proto::LogFileInfo> ServiceLogs::info(std::size_t service) const {
    auto s = stats(service);
    if (!s) {
        return std::nullopt;
    }
    return proto::LogFileInfo{s->path, static_cast<std::int64_t>(s->size),
                              static_cast<std::int64_t>(s->rotations),
                              static_cast<std::int64_t>(s->dropped)};
}

std::optional<config::LogFileSpec> ServiceLogs::spec(std::size_t service) const {
    if (service >= m_entries.size()) {
        return std::nullopt;
    }
    return m_entries[service].spec;
}

}  // namespace pkit::shell
