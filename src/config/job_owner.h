#pragma once
// Whose jobs a [[job]] selected by name may touch. A name alone would adopt anyone's job of
// that name, so llmwatch acts only on jobs of the [[job]]'s `user`:
// - left empty, `user` is the user llmwatch runs as;
// - when llmwatch runs as root, `user` must be given: root's own jobs are rarely the
//   training runs, and anyone can name a job like someone else's.
// Jobs selected by id are explicit and need no user.
#include <string>

#include "config/config.h"

namespace llmwatch {

// Fills empty users, or adds an error per [[job]] that needs one; drops the config then.
void apply_job_owners(ConfigResult& result, bool as_root, const std::string& me);

}  // namespace llmwatch
