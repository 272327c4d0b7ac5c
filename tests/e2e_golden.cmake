# End to end for ctest, with no shell (Windows, wine): ml_run on the shipped
# stories260K, greedy, against tests/golden/. Checks the story's opening, the
# golden ids, the golden SHA-256 of 64 positions of logits (mapped, read with
# --no-mmap, and -t 1/2/3 in a threaded build), a model path with spaces and
# non-ASCII characters, and two refusals with their messages.
#   cmake -DML_RUN=... -DEMULATOR="wine" -DSRC=<repo> -DTMP=<dir> -DTHREADS=ON|OFF -P e2e_golden.cmake
string(REPLACE "|" ";" emu "${EMULATOR}")
set(model ${SRC}/models/stories260K/stories260K_q8_0.mlb)
set(tok ${SRC}/models/stories260K/tok512.bin)
file(READ ${SRC}/tests/golden/stories260K_q8_0.logits64.sha256 golden_sha)
string(STRIP "${golden_sha}" golden_sha)
file(REMOVE_RECURSE ${TMP})
file(MAKE_DIRECTORY ${TMP})
set(failed 0)
set(passed 0)
macro(check what)  # check(description condition...)
  if(${ARGN})
    message("ok - ${what}")
    math(EXPR passed "${passed} + 1")
  else()
    # With what the last ml_run said, so that a failure in CI tells why.
    string(REGEX REPLACE "\n+$" "" why "${last_err}")
    string(REPLACE "\n" " | " why "${why}")
    string(SUBSTRING "${why}" 0 300 why)
    message("FAIL - ${what} (last ml_run: exit ${last_rc}: ${why})")
    math(EXPR failed "${failed} + 1")
  endif()
endmacro()
# run(<out var prefix> args...): exit code, stdout, stderr
function(run p)
  execute_process(COMMAND ${emu} ${ML_RUN} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  set(${p}_rc ${rc} PARENT_SCOPE)
  set(${p}_out "${out}" PARENT_SCOPE)
  set(${p}_err "${err}" PARENT_SCOPE)
  set(last_rc ${rc} PARENT_SCOPE)
  set(last_err "${err}" PARENT_SCOPE)
endfunction()
function(logits_sha out file)
  if(EXISTS ${file})
    file(SHA256 ${file} h)
  else()
    set(h "(no file)")
  endif()
  set(${out} ${h} PARENT_SCOPE)
endfunction()

set(prompt "Once upon a time")
run(g -m ${model} -z ${tok} -i ${prompt} -n 128 --temp 0 --ids ${TMP}/golden.ids)
string(FIND "${g_out}" "Once upon a time, there was a little girl named Lily. She loved to play outside in the park." at)
check("golden: exit 0 and the story opens like llama2.c's fp32 run" g_rc EQUAL 0 AND at EQUAL 0)
file(READ ${SRC}/tests/golden/stories260K_q8_0.ids want_ids)
set(got_ids "")
if(EXISTS ${TMP}/golden.ids)
  file(READ ${TMP}/golden.ids got_ids)
endif()
check("golden: greedy ids equal tests/golden/stories260K_q8_0.ids" got_ids STREQUAL want_ids)

foreach(mode mmap no-mmap)
  set(extra "")
  if(mode STREQUAL no-mmap)
    set(extra --no-mmap)
  endif()
  run(l -m ${model} -z ${tok} -i ${prompt} -n 64 --temp 0 ${extra} --logits ${TMP}/${mode}.f32)
  logits_sha(h ${TMP}/${mode}.f32)
  check("golden: logits SHA-256 (${mode}) ${h}" h STREQUAL golden_sha)
endforeach()
if(THREADS)
  foreach(t 1 2 3)
    run(l -m ${model} -z ${tok} -i ${prompt} -n 64 --temp 0 -t ${t} --logits ${TMP}/t${t}.f32)
    logits_sha(h ${TMP}/t${t}.f32)
    check("golden: logits SHA-256 with -t ${t}" h STREQUAL golden_sha)
  endforeach()
endif()

# A folder and a file name with spaces and non-ASCII characters (UTF-8 on
# the command line; Windows must open them through the wide-char API).
set(odd "${TMP}/dir with spaces é/modèle ü 模型.mlb")
get_filename_component(odd_dir "${odd}" DIRECTORY)
file(MAKE_DIRECTORY "${odd_dir}")
file(COPY_FILE ${model} "${odd}")
file(COPY_FILE ${tok} "${odd_dir}/tök 語.bin")
foreach(mode mmap no-mmap)
  set(extra "")
  if(mode STREQUAL no-mmap)
    set(extra --no-mmap)
  endif()
  run(u -m "${odd}" -z "${odd_dir}/tök 語.bin" -i ${prompt} -n 64 --temp 0 ${extra}
      --logits "${odd_dir}/lögits ü.f32")
  logits_sha(h "${odd_dir}/lögits ü.f32")
  check("non-ASCII paths with spaces (${mode}): exit ${u_rc}, golden logits" u_rc EQUAL 0 AND h STREQUAL golden_sha)
  file(REMOVE "${odd_dir}/lögits ü.f32")
endforeach()

# A GGUF at such a path, converted into a cache folder named so too (on
# Windows: the LOCALAPPDATA of a user named Zoë), then run from the cache.
file(COPY_FILE ${SRC}/fuzz/corpus/gguf/llama_q8_0.gguf "${odd_dir}/lláma ü.gguf")
set(cache_dir "${odd_dir}/cache é/nested ü")
set(cache_arg "${cache_dir}")
if(ML_RUN MATCHES "\\.exe$")  # Windows' own separators: each missing folder made, as with slashes
  string(REPLACE "/" "\\" cache_arg "${cache_dir}")
endif()
set(ENV{ML_CACHE_DIR} "${cache_arg}")
run(gg -m "${odd_dir}/lláma ü.gguf" -n 4 --temp 0)
unset(ENV{ML_CACHE_DIR})
file(GLOB cached "${cache_dir}/*.mlb")
list(LENGTH cached n_cached)
check("a GGUF at a non-ASCII path, cached in a non-ASCII folder: exit ${gg_rc}, ${n_cached} cached model"
      gg_rc EQUAL 0 AND n_cached EQUAL 1)

# An output path that is a folder (non-ASCII: Windows must look through the
# wide-char API) is refused before the run, not replaced after it.
file(MAKE_DIRECTORY "${odd_dir}/dossier é")
run(d -m ${model} -z ${tok} -i ${prompt} -n 8 --temp 0 --logits "${odd_dir}/dossier é")
string(FIND "${d_err}" "it is a directory" at)
check("--logits to a non-ASCII folder: exit ${d_rc}, refused as a directory" d_rc EQUAL 1 AND at GREATER -1)
if(ML_RUN MATCHES "\\.exe$")
  run(n -m ${model} -z ${tok} -i ${prompt} -n 8 --temp 0 --logits NUL)
  check("--logits NUL (the null device) is written through: exit ${n_rc}" n_rc EQUAL 0)
endif()

# A prompt piped to -f - is the same bytes as -f FILE: CRLF line ends and a
# Ctrl-Z byte (Windows' text-mode stdin would drop the CR and stop there).
string(ASCII 26 ctrl_z)
file(WRITE ${TMP}/crlf.txt "Once upon\r\na time\r\n${ctrl_z} there")
run(pf -m ${model} -z ${tok} -f ${TMP}/crlf.txt -n 20 --temp 0 --ids ${TMP}/crlf_file.ids)
execute_process(COMMAND ${emu} ${ML_RUN} -m ${model} -z ${tok} -f - -n 20 --temp 0 --ids ${TMP}/crlf_stdin.ids
                INPUT_FILE ${TMP}/crlf.txt RESULT_VARIABLE ps_rc OUTPUT_QUIET ERROR_VARIABLE last_err)
set(last_rc ${ps_rc})
set(ids_file "")
set(ids_stdin "(none)")
if(EXISTS ${TMP}/crlf_file.ids AND EXISTS ${TMP}/crlf_stdin.ids)
  file(READ ${TMP}/crlf_file.ids ids_file)
  file(READ ${TMP}/crlf_stdin.ids ids_stdin)
endif()
check("a CRLF prompt with a Ctrl-Z byte: -f - and -f FILE give the same ids"
      pf_rc EQUAL 0 AND ps_rc EQUAL 0 AND ids_file STREQUAL ids_stdin)

# ml_perplexity beside ml_run: a KL base at a non-ASCII path is saved by the
# first run and compared with by the second (Windows: seen through the
# wide-char API, never taken for a missing file and replaced).
get_filename_component(bin_dir "${ML_RUN}" DIRECTORY)
get_filename_component(bin_ext "${ML_RUN}" EXT)
set(ppl "${bin_dir}/ml_perplexity${bin_ext}")
if(EXISTS "${ppl}")
  foreach(pass save compare)
    execute_process(COMMAND ${emu} ${ppl} -m ${model} -z ${tok} -f ${SRC}/tests/data/ppl_story.txt -c 64
                            --kl-base "${odd_dir}/base é.kl"
                    RESULT_VARIABLE last_rc OUTPUT_VARIABLE kl_${pass} ERROR_VARIABLE last_err)
  endforeach()
  string(FIND "${kl_compare}" "KL base: comparing with" at)
  check("ml_perplexity: a KL base at a non-ASCII path is compared with on the second run" last_rc EQUAL 0 AND at GREATER -1)
endif()

# Refusals: the messages of the Linux build.
run(r -m "${odd_dir}/nope ü.mlb" -z ${tok})
string(FIND "${r_err}" "nope ü.mlb: cannot open" at)
check("missing model: exit 1 naming the file" r_rc EQUAL 1 AND at GREATER -1)
run(r -m ${tok} -z ${tok})
string(FIND "${r_err}" "magic: expected \"MLB1\"" at)
check("tokenizer as the model: exit 1, bad magic" r_rc EQUAL 1 AND at GREATER -1)
run(r -m ${model})
string(FIND "${r_err}" "missing -z tokenizer.bin" at)
check("no tokenizer: exit 2 (usage)" r_rc EQUAL 2 AND at GREATER -1)

message("${passed} passed, ${failed} failed, 0 skipped")
if(failed GREATER 0)
  message(FATAL_ERROR "e2e_golden: ${failed} failed")
endif()
