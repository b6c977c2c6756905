// pkitctl reload --dry-run (SPEC §21): what a reload would do now, as supervisorctl's
// `reread` tells it, and nothing changed. One line a service added, removed or changed;
// under a changed one, each key that differs with its old and new value (cut short
// past 80 bytes). A tree the reload would refuse: its positioned errors, exit 2.

#include <algorithm>
#include <iostream>

#include "ctl/client.hpp"
#include "ctl/common.hpp"

namespace pkit::ctl {

namespace {

std::string_view effect_text(const std::string& effect) {
    if (effect == "restart") {
        return "its run would be restarted";
    }
    if (effect == "start_first") {
        return "its run would be restarted, the new run first (start_first)";
    }
    if (effect == "start") {
        return "it would be started (no run now)";
    }
    if (effect == "stop") {
        return "its run would be stopped (autostart = false)";
    }
    if (effect == "rearm") {
        return "no restart: the job would be re-armed";
    }
    return "no restart: it has no run, and none would start";
}

void print_preview(const proto::ReloadPreviewResult& preview) {
    for (const auto& name : preview.added) {
        std::cout << name << ": would be added\n";
    }
    for (const auto& name : preview.removed) {
        std::cout << name << ": would be removed\n";
    }
    for (const auto& changed : preview.changed) {
        std::cout << changed.service << ": changed, " << effect_text(changed.effect) << "\n";
        std::size_t width = 0;
        for (const auto& key : changed.keys) {
            width = std::max(width, key.key.size());
        }
        for (const auto& key : changed.keys) {
            std::cout << "  " << key.key << std::string(width - key.key.size() + 2, ' ')
                      << key.old_value.value_or("(unset)") << " -> "
                      << key.new_value.value_or("(unset)") << "\n";
        }
    }
    if (preview.added.empty() && preview.removed.empty() && preview.changed.empty()) {
        std::cout << "no change: ";
    } else {
        std::cout << "dry run, nothing changed; ";
    }
    std::cout << preview.unchanged << " unchanged\n";
}

}  // namespace

int run_reload_preview(const GlobalOptions& global) {
    proto::Request request{.cmd = proto::Command::reload_preview};
    Client client(global, timeout_of(global));
    client.send(request);
    proto::Reply reply = client.read_reply();
    if (reply.kind == proto::Reply::Kind::error &&
        reply.error.code == proto::ErrorCode::invalid_config) {
        // Every problem on a line of its own, FILE:LINE:COLUMN first (SPEC §1).
        std::cerr << reply.error.message << "\n"
                  << "pkitctl: a reload would refuse this configuration; nothing changed\n";
        return k_exit_usage;
    }
    if (reply.kind == proto::Reply::Kind::error &&
        reply.error.code == proto::ErrorCode::unknown_command) {
        throw CtlError(k_exit_daemon_error,
                       "this pkitd does not know reload --dry-run: it is older than pkitctl "
                       "(`pkitctl upgrade` brings it to the installed version); nothing changed");
    }
    proto::json result = result_of(std::move(reply), client.path());
    auto preview = result.get<proto::ReloadPreviewResult>();
    for (const auto& warning : preview.warnings) {
        std::cerr << warning << "\n";
    }
    if (global.json) {
        print_json(result);
    } else {
        print_preview(preview);
    }
    return k_exit_ok;
}

}  // namespace pkit::ctl
