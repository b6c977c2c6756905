// File probes (SPEC §2): the path's mtime must be newer than 2 × interval. The stat
// goes through uv_fs_stat on libuv's thread pool, so a hung network mount costs a
// timed-out attempt, never a blocked loop. mtime is wall-clock time, so the age is
// measured against the wall clock too; a file modified "in the future" (clock stepped
// back) is fresh.

#include <time.h>

#include <chrono>

#include "daemon/shell/probes/probe_attempt.hpp"

namespace pkit::shell {

namespace {

using namespace std::chrono_literals;

class FileAttempt final : public ProbeAttempt {
public:
    FileAttempt(ProbeRunner& runner, const ProbeRequest& request)
        : ProbeAttempt(runner, request),
          m_path(request.probe->target),
          m_max_age(2 * request.probe->interval) {}

    ~FileAttempt() override {
        if (m_stating != nullptr) {
            m_stating->data = nullptr;
            uv_cancel(reinterpret_cast<uv_req_t*>(m_stating));
        }
    }

private:
    void begin() override {
        auto* req = new uv_fs_t{};
        req->data = this;
        int rc = uv_fs_stat(loop(), req, m_path.c_str(), &FileAttempt::on_stat);
        if (rc != 0) {
            uv_fs_req_cleanup(req);
            delete req;
            complete(false, std::string("cannot stat: ") + uv_strerror(rc));
            return;
        }
        m_stating = req;
    }

    static void on_stat(uv_fs_t* req) {
        std::unique_ptr<uv_fs_t> owned(req);
        auto* self = static_cast<FileAttempt*>(req->data);
        auto result = req->result;
        uv_timespec_t mtime = req->statbuf.st_mtim;
        uv_fs_req_cleanup(req);
        if (self == nullptr) {
            return;
        }
        self->m_stating = nullptr;
        guarded([&] { self->judge(static_cast<int>(result), mtime); });
    }

    void judge(int result, uv_timespec_t mtime) {
        if (result < 0) {
            complete(false, std::string("cannot stat: ") + uv_strerror(result));
            return;
        }
        timespec now{};
        clock_gettime(CLOCK_REALTIME, &now);
        auto age = std::chrono::seconds(now.tv_sec - mtime.tv_sec) +
                   std::chrono::nanoseconds(now.tv_nsec - mtime.tv_nsec);
        auto shown = age < 10s ? std::chrono::duration_cast<config::Duration>(age)
                               : config::Duration(std::chrono::round<std::chrono::seconds>(age));
        if (age < m_max_age) {
            complete(true, age < 0s ? std::string("modified in the future")
                                    : "modified " + format_probe_duration(shown) + " ago");
            return;
        }
        complete(false, "stale: modified " + format_probe_duration(shown) + " ago");
    }

    std::string m_path;
    config::Duration m_max_age;
    uv_fs_t* m_stating = nullptr;  // owned by its callback
};

}  // namespace

std::unique_ptr<ProbeAttempt> make_file_attempt(ProbeRunner& runner, const ProbeRequest& request) {
    if (request.probe->target.empty()) {
        return make_failed_attempt(runner, request, "file probe without a path");
    }
    return std::make_unique<FileAttempt>(runner, request);
}

}  // namespace pkit::shell
