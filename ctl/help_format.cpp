#include "ctl/help_format.hpp"

#include <algorithm>
#include <cctype>
#include <string>

namespace pkit::ctl {
namespace {

// CLI11's own names for a value's C++ type: never shown; the option's name is.
bool generic(const std::string& type) {
    return type == "TEXT" || type == "INT" || type == "UINT" || type == "FLOAT" ||
           type == "NUMBER" || type == "BOOLEAN";
}

class WordsFormatter : public CLI::Formatter {
public:
    std::string make_option_opts(const CLI::Option* opt) const override {
        if (opt->get_type_size() == 0 || opt->get_type_name().empty()) {
            return "";  // a flag
        }
        std::string out;
        if (opt->nonpositional()) {
            // The word set with type_name(), without the validators' notes after ':'.
            std::string type = opt->get_type_name();
            type = type.substr(0, type.find(':'));
            if (generic(type)) {
                type = opt->get_lnames().empty() ? "VALUE" : opt->get_lnames().front();
                std::ranges::transform(type, type.begin(),
                                       [](unsigned char c) { return std::toupper(c); });
            }
            out += " " + type;
            if (!opt->get_default_str().empty()) {
                out += " (default " + opt->get_default_str() + ")";
            }
        }
        if (opt->get_expected_max() == CLI::detail::expected_max_vector_size) {
            out += " ...";
        }
        if (opt->get_required()) {
            out += " (required)";
        }
        return out;
    }
};

}  // namespace

std::shared_ptr<CLI::Formatter> words_formatter() {
    return std::make_shared<WordsFormatter>();
}

}  // namespace pkit::ctl
