#pragma once
// Slurm's text outputs, for clusters whose squeue/sinfo have no --json (before 21.08) and
// for `inspect`: explicit, untruncated formats with '|' as the delimiter.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "slurm/slurm_job.h"
#include "slurm/slurm_node.h"

namespace llmwatch {

// The format llmwatch asks for: squeue -h -o "%i|%A|%K|%T|%j|%u|%N|%r|%M|%l|%S".
inline constexpr const char* kSqueueTextFormat = "%i|%A|%K|%T|%j|%u|%N|%r|%M|%l|%S";
SqueueParse parse_squeue_text(std::string_view text, const JobFilter* filter = nullptr);
// The time limit (%l) in minutes and the start time (%S, or unix seconds) in unix seconds; 0
// when none.
std::int64_t slurm_minutes(std::string_view text);
std::int64_t slurm_timestamp(std::string_view text);

// A '|'-separated sinfo with a header line (sinfo -N -o "%N|%T|%E", or wider site formats
// such as gcm's): columns are found by name (NODELIST or HOSTNAMES, STATE, REASON).
inline constexpr const char* kSinfoTextFormat = "%N|%T|%o|%E|%R";
SinfoParse parse_sinfo_text(std::string_view text);

// `scontrol show job|node`: records separated by blank lines, Key=Value pairs; a value may
// contain spaces (Reason=Kill task failed) and runs until the next Key=.
std::vector<std::map<std::string, std::string>> parse_scontrol_show(std::string_view text);
// One field of such a record: nullopt when the record lacks it, "" for scontrol's "(null)"
// (a field that is set to nothing), else the value.
std::optional<std::string> scontrol_field(const std::map<std::string, std::string>& record,
                                          const std::string& key);

// `sacct -X -D -n -P -o kSacctFields` (with SLURM_TIME_FORMAT=%s): one record per allocation,
// several for a job id that was requeued (-D), keyed by field name. Lines with fewer fields
// (a cut output) are skipped; only the last field (Reason) may hold a '|'.
inline constexpr const char* kSacctFields = "JobID,Start,End,State,ExitCode,NodeList,NNodes,Reason";
std::vector<std::map<std::string, std::string>> parse_sacct(std::string_view text);
// The record of task `job_id` that started at `started` (unix seconds; Start is read as unix
// seconds or as Slurm's ISO time): a requeued id has one record per start, and another start's
// record says nothing of this task. With no start known, the id's latest record. Else empty.
std::map<std::string, std::string> sacct_record_of(
    const std::vector<std::map<std::string, std::string>>& records, const std::string& job_id,
    std::int64_t started);

// What squeue's text form lacks of a running task, for several tasks in one call (#25: one
// `scontrol show job` per new task was a burst of RPCs when many started at once):
// squeue -h -t all -j ID,... -O kJobDetailsFormat. Fields end in the unit separator (0x1f),
// which no path or name of a real job holds. Each task's record is keyed as `scontrol show
// job` keys it (StdOut, StdErr, Command, WorkDir, Account, Partition, GroupName, TRES: what
// it was allocated, for the goodput ledger's GPUs), by its squeue id
// ("7", "5_1"); StdOut and StdErr are squeue's patterns ("%j" not yet expanded). A line
// with another number of fields (a cut output) is skipped.
inline constexpr const char* kJobDetailsFormat =
    "JobArrayID:\x1f,STDOUT:\x1f,STDERR:\x1f,Command:\x1f,WorkDir:\x1f,Account:\x1f,"
    "Partition:\x1f,GroupName:\x1f,tres-alloc:\x1f";
JobDetails parse_job_details(std::string_view text);

}  // namespace llmwatch
