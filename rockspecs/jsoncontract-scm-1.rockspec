rockspec_format = "3.0"
package = "jsoncontract"
version = "scm-1"
-- The checkout as it is: `luarocks make` (or `luarocks build` with no argument, which picks this,
-- the newest rockspec) in the checkout; `luarocks build rockspecs/jsoncontract-scm-1.rockspec`
-- beside jsoncontract-scm.tar.gz, the checkout's tarball from `make dist`.
source = {
   url = "jsoncontract-scm.tar.gz",
   dir = "jsoncontract-scm",
}
description = {
   summary = "Make a language model's structured output safe to hand to code",
   detailed = [[
A contract (JSON Schema + version + instructions + business rules in Lua) travels with the
request; the reply passes transport, protocol, format (strict RFC 8259), schema and rules
gates and becomes a checked Lua value or a named, listed reason why not.
]],
   license = "MIT",
   labels = { "json", "json-schema", "llm", "openresty" },
}
dependencies = {
   "lua >= 5.1",
   -- at run time: the clock and the fault/stand-in servers (luasocket), the CLI (argparse,
   -- luafilesystem), the examples' orders table (luasql-sqlite3), the job store (luadbi-sqlite3;
   -- luadbi-postgresql for a PostgreSQL store), the stand-in's JSON (lua-cjson)
   "luasocket",
   "luafilesystem",
   "argparse",
   "luasql-sqlite3",
   "luadbi-sqlite3",
   "lua-cjson",
}
-- Only libraries are looked up: Debian puts curl/curl.h under the multiarch folder
-- (/usr/include/x86_64-linux-gnu), where the compiler finds it but LuaRocks' header check
-- does not; pcre2.h and openssl/evp.h are checked where they always are.
external_dependencies = {
   CURL = { library = "curl" },
   PCRE2 = { header = "pcre2.h", library = "pcre2-8" },
   CRYPTO = { header = "openssl/evp.h", library = "crypto" },
}
build = {
   type = "builtin",
   modules = {
      ["jsoncontract.core"] = {
         sources = { "csrc/core.c", "csrc/error.c", "csrc/utf8.c", "csrc/opts.c", "csrc/tape.c",
                     "csrc/parse.c", "csrc/encode.c", "csrc/schema_compile.c",
                     "csrc/schema_ref.c", "csrc/schema_eval.c", "csrc/schema_report.c",
                     "csrc/schema_lua.c", "csrc/schema_format.c", "csrc/pattern.c",
                     "csrc/transport.c", "csrc/stream.c", "csrc/metaschemas.c",
                     "csrc/ffi.c" },
         defines = { "JC_VERSION=\"0.1.0\"", "_POSIX_C_SOURCE=200809L" },
         libraries = { "curl", "pcre2-8", "crypto" },
         incdirs = { "$(CURL_INCDIR)", "$(PCRE2_INCDIR)", "$(CRYPTO_INCDIR)" },
         libdirs = { "$(CURL_LIBDIR)", "$(PCRE2_LIBDIR)", "$(CRYPTO_LIBDIR)" },
      },
      ["jsoncontract.batch"] = "lua/jsoncontract/batch.lua",
      ["jsoncontract.cli.check"] = "lua/jsoncontract/cli/check.lua",
      ["jsoncontract.cli.diff"] = "lua/jsoncontract/cli/diff.lua",
      ["jsoncontract.cli.enqueue"] = "lua/jsoncontract/cli/enqueue.lua",
      ["jsoncontract.cli.examples"] = "lua/jsoncontract/cli/examples.lua",
      ["jsoncontract.cli.export"] = "lua/jsoncontract/cli/export.lua",
      ["jsoncontract.cli"] = "lua/jsoncontract/cli/init.lua",
      ["jsoncontract.cli.job_commands"] = "lua/jsoncontract/cli/job_commands.lua",
      ["jsoncontract.cli.lint"] = "lua/jsoncontract/cli/lint.lua",
      ["jsoncontract.cli.probe"] = "lua/jsoncontract/cli/probe.lua",
      ["jsoncontract.cli.replay"] = "lua/jsoncontract/cli/replay.lua",
      ["jsoncontract.cli.review"] = "lua/jsoncontract/cli/review.lua",
      ["jsoncontract.cli.run"] = "lua/jsoncontract/cli/run.lua",
      ["jsoncontract.cli.selftest"] = "lua/jsoncontract/cli/selftest.lua",
      ["jsoncontract.cli.status"] = "lua/jsoncontract/cli/status.lua",
      ["jsoncontract.cli.triage"] = "lua/jsoncontract/cli/triage.lua",
      ["jsoncontract.cli.util"] = "lua/jsoncontract/cli/util.lua",
      ["jsoncontract.cli.worker"] = "lua/jsoncontract/cli/worker.lua",
      ["jsoncontract.compat"] = "lua/jsoncontract/compat.lua",
      ["jsoncontract.contract.adapters"] = "lua/jsoncontract/contract/adapters.lua",
      ["jsoncontract.contract.diff"] = "lua/jsoncontract/contract/diff.lua",
      ["jsoncontract.contract"] = "lua/jsoncontract/contract/init.lua",
      ["jsoncontract.contract.lint"] = "lua/jsoncontract/contract/lint.lua",
      ["jsoncontract.contract.rules"] = "lua/jsoncontract/contract/rules.lua",
      ["jsoncontract.errors"] = "lua/jsoncontract/errors.lua",
      ["jsoncontract.evidence"] = "lua/jsoncontract/evidence.lua",
      ["jsoncontract.feedback"] = "lua/jsoncontract/feedback.lua",
      ["jsoncontract.ffi"] = "lua/jsoncontract/ffi.lua",
      ["jsoncontract"] = "lua/jsoncontract/init.lua",
      ["jsoncontract.job"] = "lua/jsoncontract/job.lua",
      ["jsoncontract.jobs.breaker"] = "lua/jsoncontract/jobs/breaker.lua",
      ["jsoncontract.jobs.definition"] = "lua/jsoncontract/jobs/definition.lua",
      ["jsoncontract.jobs.export"] = "lua/jsoncontract/jobs/export.lua",
      ["jsoncontract.jobs.ratelimit"] = "lua/jsoncontract/jobs/ratelimit.lua",
      ["jsoncontract.jobs.runner"] = "lua/jsoncontract/jobs/runner.lua",
      ["jsoncontract.jobs.scheduler"] = "lua/jsoncontract/jobs/scheduler.lua",
      ["jsoncontract.jobs.store"] = "lua/jsoncontract/jobs/store.lua",
      ["jsoncontract.json"] = "lua/jsoncontract/json.lua",
      ["jsoncontract.nginx.body"] = "lua/jsoncontract/nginx/body.lua",
      ["jsoncontract.nginx.contracts"] = "lua/jsoncontract/nginx/contracts.lua",
      ["jsoncontract.nginx.evidence"] = "lua/jsoncontract/nginx/evidence.lua",
      ["jsoncontract.nginx.handover"] = "lua/jsoncontract/nginx/handover.lua",
      ["jsoncontract.nginx"] = "lua/jsoncontract/nginx/init.lua",
      ["jsoncontract.nginx.metrics"] = "lua/jsoncontract/nginx/metrics.lua",
      ["jsoncontract.providers.anthropic"] = "lua/jsoncontract/providers/anthropic.lua",
      ["jsoncontract.providers.envelope"] = "lua/jsoncontract/providers/envelope.lua",
      ["jsoncontract.providers.gbnf"] = "lua/jsoncontract/providers/gbnf.lua",
      ["jsoncontract.providers.gemini"] = "lua/jsoncontract/providers/gemini.lua",
      ["jsoncontract.providers"] = "lua/jsoncontract/providers/init.lua",
      ["jsoncontract.providers.llamacpp"] = "lua/jsoncontract/providers/llamacpp.lua",
      ["jsoncontract.providers.ndjson"] = "lua/jsoncontract/providers/ndjson.lua",
      ["jsoncontract.providers.ollama"] = "lua/jsoncontract/providers/ollama.lua",
      ["jsoncontract.providers.openai"] = "lua/jsoncontract/providers/openai.lua",
      ["jsoncontract.providers.openai_responses"] = "lua/jsoncontract/providers/openai_responses.lua",
      ["jsoncontract.providers.rules.anthropic"] = "lua/jsoncontract/providers/rules/anthropic.lua",
      ["jsoncontract.providers.rules.gemini"] = "lua/jsoncontract/providers/rules/gemini.lua",
      ["jsoncontract.providers.rules.llamacpp"] = "lua/jsoncontract/providers/rules/llamacpp.lua",
      ["jsoncontract.providers.rules.ollama"] = "lua/jsoncontract/providers/rules/ollama.lua",
      ["jsoncontract.providers.rules.openai"] = "lua/jsoncontract/providers/rules/openai.lua",
      ["jsoncontract.providers.schema_subset"] = "lua/jsoncontract/providers/schema_subset.lua",
      ["jsoncontract.providers.sse"] = "lua/jsoncontract/providers/sse.lua",
      ["jsoncontract.providers.streaming"] = "lua/jsoncontract/providers/streaming.lua",
      ["jsoncontract.review.desk"] = "lua/jsoncontract/review/desk.lua",
      ["jsoncontract.review.form"] = "lua/jsoncontract/review/form.lua",
      ["jsoncontract.review.html"] = "lua/jsoncontract/review/html.lua",
      ["jsoncontract.review.nginx"] = "lua/jsoncontract/review/nginx.lua",
      ["jsoncontract.review.queries"] = "lua/jsoncontract/review/queries.lua",
      ["jsoncontract.review.serve"] = "lua/jsoncontract/review/serve.lua",
      ["jsoncontract.review.spans"] = "lua/jsoncontract/review/spans.lua",
      ["jsoncontract.run.exchange"] = "lua/jsoncontract/run/exchange.lua",
      ["jsoncontract.run"] = "lua/jsoncontract/run/init.lua",
      ["jsoncontract.run.policy"] = "lua/jsoncontract/run/policy.lua",
      ["jsoncontract.secrets"] = "lua/jsoncontract/secrets.lua",
      ["jsoncontract.setup"] = "lua/jsoncontract/setup.lua",
      ["jsoncontract.standin.conversation"] = "lua/jsoncontract/standin/conversation.lua",
      ["jsoncontract.standin.faults"] = "lua/jsoncontract/standin/faults.lua",
      ["jsoncontract.standin.generate"] = "lua/jsoncontract/standin/generate.lua",
      ["jsoncontract.standin.hash"] = "lua/jsoncontract/standin/hash.lua",
      ["jsoncontract.standin.process"] = "lua/jsoncontract/standin/process.lua",
      ["jsoncontract.standin.server"] = "lua/jsoncontract/standin/server.lua",
      ["jsoncontract.standin.text"] = "lua/jsoncontract/standin/text.lua",
      ["jsoncontract.standin.wire"] = "lua/jsoncontract/standin/wire.lua",
      ["jsoncontract.transport.curl"] = "lua/jsoncontract/transport/curl.lua",
      ["jsoncontract.transport.default"] = "lua/jsoncontract/transport/default.lua",
      ["jsoncontract.transport.http_status"] = "lua/jsoncontract/transport/http_status.lua",
      ["jsoncontract.transport.openresty"] = "lua/jsoncontract/transport/openresty.lua",
      ["jsoncontract.util"] = "lua/jsoncontract/util.lua",
      ["jsoncontract.utf8"] = "lua/jsoncontract/utf8.lua",
   },
   install = {
      bin = { "bin/jsoncontract", "bin/jsoncontract-standin" },
   },
   -- The examples (contracts, inputs, the stand-in's knowledge of them) are the commands' data:
   -- installed in the rock's folder, where bin/jsoncontract finds them beside its bin/.
   copy_directories = { "examples" },
}
test = {
   type = "busted",
}
