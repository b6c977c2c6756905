// Variables in a configuration file (SPEC §13): the syntax of every place that expands,
// checked at load with its position, and the texts kept for --check's warnings about
// variables that no known source defines.

#include <cstdlib>

#include "config/load_steps.hpp"
#include "config/variables.hpp"

namespace pkit::config::detail {
namespace {

// One string that expands: a syntax error is reported at it; a text holding a variable
// is kept for the warnings.
void check_text(const Diags& d, const toml::node& node, std::string_view what,
                std::vector<VariableText>& texts) {
    const auto* text = node.as_string();
    if (text == nullptr || text->get().find('$') == std::string::npos) {
        return;
    }
    if (auto error = check_variables(text->get())) {
        d.error(pos_of(node), cat(what, ": ", error->message(), " (at character ",
                                  std::to_string(error->offset + 1), " of the value)"));
        return;
    }
    if (text->get().find("${") != std::string::npos) {
        texts.push_back({text->get(), pos_of(node), std::string(what)});
    }
}

// A string, or each string of an array.
void check_strings(const Diags& d, const toml::node* node, std::string_view what,
                   std::vector<VariableText>& texts) {
    if (node == nullptr) {
        return;
    }
    if (const auto* array = node->as_array()) {
        for (const toml::node& element : *array) {
            check_text(d, element, what, texts);
        }
        return;
    }
    check_text(d, *node, what, texts);
}

void check_probe(const Diags& d, const toml::table& root, std::string_view section,
                 std::vector<VariableText>& texts) {
    const auto* table = root.get_as<toml::table>(section);
    if (table == nullptr) {
        return;
    }
    for (std::string_view key : {"exec", "tcp", "http", "file"}) {
        check_strings(d, table->get(key), cat(section, ".", key), texts);
    }
}

}  // namespace

std::vector<VariableText> check_service_variables(const Diags& d, const toml::table& root) {
    std::vector<VariableText> texts;
    check_strings(d, root.get("command"), "command", texts);
    check_strings(d, root.get("cwd"), "cwd", texts);
    check_strings(d, root.get("env_file"), "env_file", texts);
    if (const auto* env = root.get_as<toml::table>("env")) {
        for (const auto& [key, node] : *env) {
            check_text(d, node, cat("env.", key.str()), texts);
        }
    }
    check_probe(d, root, "health", texts);
    check_probe(d, root, "ready", texts);
    if (const auto* output = root.get_as<toml::table>("output")) {
        // Syntax only: the path is expanded at load from pkitd's own environment, and
        // a variable it lacks is an error there (log_file.hpp), not a run's warning.
        std::vector<VariableText> own;
        check_strings(d, output->get("file"), "output.file", own);
    }
    return texts;
}

void check_daemon_variables(const Diags& d, const toml::table& root) {
    std::vector<VariableText> unused;
    check_strings(d, root.get("env_file"), "env_file", unused);
    if (const auto* env = root.get_as<toml::table>("env")) {
        for (const auto& [key, node] : *env) {
            check_text(d, node, cat("env.", key.str()), unused);
        }
    }
}

// The undefined variables named in one value's warnings: each takes a pass over the
// value, so a value of 1 MiB naming 100,000 of them would keep --check busy for hours.
constexpr std::size_t k_max_named_undefined = 8;

void warn_undefined_variables(const ServiceDraft& service, const DaemonSpec& daemon,
                              std::vector<Diagnostic>& out) {
    const ServiceSpec& spec = service.spec;
    const ProcessSpec& process = *spec.process;
    // Whatever an env_file holds is known only when it is read, at each run's start.
    if (service.variable_texts.empty() || !process.env_files.empty() || !daemon.env_files.empty()) {
        return;
    }
    std::vector<std::string> assumed;
    auto known = [&](std::string_view name) -> std::optional<std::string_view> {
        std::string key(name);
        bool defined = process.env.contains(key) || daemon.env.contains(key) ||
                       key == "PKIT_SERVICE" || key == "PKIT_INSTANCE" || key == "PKIT_RUN" ||
                       (process.user.set() &&
                        (key == "HOME" || key == "USER" || key == "LOGNAME" || key == "SHELL")) ||
                       (spec.ready->notify && key == "NOTIFY_SOCKET") ||
                       (!process.clear_env && std::getenv(key.c_str()) != nullptr) ||
                       std::ranges::find(assumed, key) != assumed.end();
        return defined ? std::optional<std::string_view>("") : std::nullopt;
    };
    for (const VariableText& text : service.variable_texts) {
        assumed.clear();
        // Each pass names the first undefined variable; the next assumes it defined.
        for (std::size_t named = 0;; ++named) {
            auto result = expand_variables(text.text, known);
            if (result || result.error().kind != VariableError::Kind::undefined) {
                break;
            }
            if (named == k_max_named_undefined) {
                out.push_back(
                    Diagnostic{spec.file, text.pos.line, text.pos.column,
                               cat(text.what,
                                   ": more variables are not defined either "
                                   "(the first ",
                                   std::to_string(k_max_named_undefined), " of a value are named)"),
                               true});
                break;
            }
            out.push_back(Diagnostic{spec.file, text.pos.line, text.pos.column,
                                     cat(text.what, ": variable ", quote(result.error().name),
                                         " is not defined by pkitd's environment, pkitd.toml's "
                                         "[env] or the service's env; a run would fail with "
                                         "undefined_variable"),
                                     true});
            assumed.push_back(result.error().name);
        }
    }
}

}  // namespace pkit::config::detail
