#pragma once
// `llmwatch goodput --html FILE` (#29): one file with the ledger's table and a stacked bar per
// day as inline SVG. No JavaScript, nothing fetched: it opens from a mail attachment.
#include <string>
#include <vector>

#include "store/goodput_ledger.h"

namespace llmwatch {

std::string goodput_html(const std::vector<GoodputRow>& rows, const std::string& period);

}  // namespace llmwatch
