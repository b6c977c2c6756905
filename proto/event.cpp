#include "proto/event.hpp"

#include "proto/optional_json.hpp"
#include "proto/results.hpp"

namespace pkit::proto {

using detail::optional_to_json;

void to_json(json& out, const Event& value) {
    out = make_event(value.type, value.service, value.group, value.at);
    if (value.pid) {
        out["pid"] = *value.pid;
    }
    if (value.run) {
        out["run"] = *value.run;
    }
    if (value.exited) {
        if (const auto& exit = value.exited->exit) {
            out["code"] = optional_to_json(exit->code);
            out["signal"] = optional_to_json(exit->signal);
            out["duration"] = exit->duration;
            out["timed_out"] = exit->timed_out;
            out["killed_by"] = optional_to_json(exit->killed_by);
            out["oom_killed"] = exit->oom_killed;
        } else {
            out["code"] = nullptr;
            out["signal"] = nullptr;
            out["duration"] = 0.0;
        }
        out["launch_error"] = optional_to_json(value.exited->launch_error);
    }
    if (value.delay) {
        out["delay"] = *value.delay;
    }
    if (value.restart) {
        out["restart"] = *value.restart;
    }
    if (value.pause) {
        out["pause"] = *value.pause;
    }
    if (value.status) {
        out["status"] = *value.status;
    }
    if (value.reason) {
        out["reason"] = *value.reason;
    }
}

}  // namespace pkit::proto
