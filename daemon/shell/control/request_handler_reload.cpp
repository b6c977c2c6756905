// `reload` (SPEC §8, §21): answered once the tree has been read (on a worker thread)
// and applied, and then, unless no_block, once every start_first replacement it began
// is through: its new run ready, or failed with the old run serving on. Those replies
// wait as a restart's do, in m_pending, answered by check_pending() after a pump.
// `reload_preview` (pkitctl reload --dry-run): what a reload would do; nothing applied.

#include "daemon/shell/control/request_handler.hpp"

namespace pkit::shell {

namespace {

proto::ReloadResult reload_result(const core::ReloadOutcome& outcome,
                                  const std::vector<std::string>& warnings) {
    proto::ReloadResult result;
    result.added = outcome.added;
    result.removed = outcome.removed;
    result.changed = outcome.changed;
    result.unchanged = outcome.unchanged;
    result.warnings = warnings;
    return result;
}

// What became of the replacement of `s`'s run `old_run`, which a pending reload waited
// for; its reason names the run that failed and the one that serves on.
proto::ReplacementResult replacement_result(const core::Service& s, std::uint64_t old_run,
                                            bool shutting_down) {
    proto::ReplacementResult out{.service = s.name(), .ok = false, .reason = std::nullopt};
    const core::Replacement* r = s.replacement();
    if (r == nullptr || r->old_run != old_run) {
        out.reason = "restarted or stopped again before its new run was ready";
    } else if (r->failure) {
        out.reason = *r->failure + "; run " + std::to_string(old_run) + " keeps running";
    } else if (!r->done) {
        out.reason = shutting_down ? "pkitd is shutting down" : "not through yet";
    } else {
        out.ok = true;
    }
    return out;
}

}  // namespace

void RequestHandler::handle_reload(ConnectionId connection, const proto::Request& request) {
    m_daemon.reload([this, connection, id = request.id,
                     no_block = request.no_block](const DaemonPort::ReloadResult& outcome) {
        if (!outcome) {
            reply_error(connection, id, proto::ErrorCode::invalid_config, outcome.error());
            return;
        }
        Pending pending{connection,
                        id,
                        proto::Command::reload,
                        {},
                        {},
                        std::nullopt,
                        std::make_shared<proto::ReloadResult>(
                            reload_result(outcome->outcome, outcome->warnings))};
        for (const core::ReloadReplacement& replacement : outcome->outcome.replacements) {
            pending.services.push_back(replacement.service);
            pending.runs.push_back(replacement.old_run);
        }
        if (no_block) {
            for (std::size_t service : pending.services) {
                pending.reload->replacements.push_back(proto::ReplacementResult{
                    m_daemon.supervisor().service(service).name(), std::nullopt, std::nullopt});
            }
            reply_ok(connection, id, *pending.reload);
            return;
        }
        if (pending_done(pending)) {
            reply_reload(pending);
            return;
        }
        m_pending.push_back(std::move(pending));  // answered by check_pending
    });
}

void RequestHandler::reply_reload(const Pending& pending) {
    const core::Supervisor& sup = m_daemon.supervisor();
    proto::ReloadResult result = *pending.reload;
    for (std::size_t k = 0; k < pending.services.size(); ++k) {
        result.replacements.push_back(replacement_result(sup.service(pending.services[k]),
                                                         pending.runs[k], sup.shutting_down()));
    }
    reply_ok(pending.connection, pending.id, result);
}

void RequestHandler::handle_reload_preview(ConnectionId connection, const proto::Request& request) {
    m_daemon.preview_reload([this, connection,
                             id = request.id](const DaemonPort::PreviewResult& outcome) {
        if (!outcome) {
            reply_error(connection, id, proto::ErrorCode::invalid_config, outcome.error());
            return;
        }
        const core::ReloadPreview& preview = outcome->preview;
        proto::ReloadPreviewResult result;
        result.added = preview.added;
        result.removed = preview.removed;
        result.unchanged = preview.unchanged;
        result.warnings = outcome->warnings;
        for (const core::ChangedService& changed : preview.changed) {
            proto::ChangedServiceResult row;
            row.service = changed.name;
            row.effect = std::string(core::to_string(changed.effect));
            row.restart = changed.effect == core::ReloadEffect::restart ||
                          changed.effect == core::ReloadEffect::start_first;
            for (const config::KeyChange& key : changed.keys) {
                row.keys.push_back(proto::KeyChangeResult{key.key, key.old_value, key.new_value});
            }
            result.changed.push_back(std::move(row));
        }
        reply_ok(connection, id, result);
    });
}

}  // namespace pkit::shell
