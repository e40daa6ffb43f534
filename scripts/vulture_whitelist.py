"""Names vulture (the dead-code check in scripts/test.sh) cannot see used: read by a framework, a template or
a file format rather than by our code. Framework callbacks by decorator (typer commands, FastAPI routes and
handlers, pydantic validators, pytest fixtures) are in pyproject.toml's [tool.vulture] ignore_decorators."""
# ruff: noqa: B018, F821

# Python reads these: inspect reads __signature__ (rescue run's options, made from RunOptions); module-level
# __getattr__ is called for a missing attribute (lazy imports of rescue and rescue.engine).
__getattr__
_.__signature__
# Jinja templates read these (report/templates/report.html.j2).
_.data_uri
_.css
# Keys of results.json's TypedDicts that the run writes and readers of the file read (rescue.tasks.batching's
# BatchingSummary, rescue.scoring.judge's JudgeUsage, rescue.scoring.bertscore's BackboneDescription,
# rescue.scoring.judge_agreement's Stability; rescue.tasks.base's LenientNotes, written and read by key;
# rescue.llm._reliable's CallCounts).
_.grouped_batches
_.split_batches
_.leak_free
_.batch_input_tokens
_.batch_output_tokens
_.idf
_.bert_score_version
_.transformers_version
_.torch_version
_.pair_matching
_.weights_version
_.vp_matching
_.flip_rate
_.read_from_prose
_.cached_input_share
# Keys of the judge's data (rescue.tasks.er's EmotionJudgeData, rescue.tasks.vp's ViewpointJudgeData): written
# into the judge's prompt as JSON (rescue.scoring.judge.judge_prompt), where the judge model reads them.
_.predicted_emotion
_.gold_emotion
_.predicted_viewpoints
_.gold_viewpoints
# Keys of TypedDicts that code writes and the pages' JavaScript or a reader of the file reads (review answers and the
# export's provenance: rescue.review.shapes; Instance.extra).
_.my_status
_.commented_segments
_.discarded_segments
_.needs_adjudication
_.next_open
_.remaining_rows
_.status_counts
_.verified_segments
_.answer_kind
_.discard_reasons
_.draft_invalid
_.acceptance_rate
_.active_seconds
_.alpha_of
_.annotator
_.disagreements
_.draft_acceptance
_.exact_agreement
_.idle_seconds
_.mean_s
_.median_row_seconds
_.median_s
_.percent_agreement
_.rows_worked
_.seconds_per_row
_.text_fields
_.unchanged
_.nullable
_.clips_present
_.draft_rows
_.verified_by
_.adjudicated_by
_.verified_at
_.changes_from_draft
_.discarded
_.exported_at
_.not_exported
_.speaker_names
_.has_media
_.my_reviewed_rows
_.final_status
_.gold_source
_.target_source
# Fields of stored formats (results.json, the release format, batches.json): written and read back whole.
_.relation_pattern_reason
_.relation_pattern_evidence_rows
_.origin_line
_.basis
_.elapsed_s
_.run_id
_.request_errors
_.spent_this_run
_.incomplete
_.rpp_gold_field
_.rescue_version
# rescue run's options as RunOptions declares them: typer reads each field (by name) into an option.
_.media_workers
_.input_file_id
_.batch_cached_input_tokens
# Python reads this flag before writing bytecode (tests/conftest.py turns caching back on).
_.dont_write_bytecode
# Settings of libraries, set on their objects: typer/click, llama-cpp-python, uvicorn.
_.rich_markup_mode
_.metavar
_.use_extra_bufts
_.should_exit
# pytest reads these module globals.
pytest_plugins
pytestmark
# Enum members chosen by value on the command line (rescue export --format hf).
_.hf
# http.server calls these on a request handler (tests' throwaway servers).
_.do_GET
_.do_POST
_.log_message
# Attributes tests set on stand-in task modules, for the registry to find or ignore.
_.SOMETHING
_.helper
_.VIEWPOINTS
# CTranslate2 reads these off a model spec when it saves it; tokenizers reads its pipeline's parts when it
# encodes (rescue.testing.tiny_whisper makes a faster-whisper model that way).
_.suppress_ids
_.suppress_ids_begin
_.lang_ids
_.alignment_heads
_.encodings
_.gamma
_.beta
_.pre_tokenizer
# click calls these on a command and a parameter it builds; rescue.cli replaces them on the instances (help
# drawn as plain-text panels, a help flag taken without typer's conversion).
_.format_options
_.format_epilog
_.process_value
# A bundle's manifest field that a verifier and a leaderboard read as JSON, and the entry page's template shows
# (rescue.submissions.bundle.SystemFacts).
_.configured
# Keys of the human reference's TypedDicts (rescue.human.shapes) that the page's JavaScript, human.json's readers
# (rescue.report.people, by key) or a person reading human.json read.
_.unanswered
_.assigned_per_person
_.answered_per_person
_.median_s_per_item
# Keys of a prompt's TypedDicts (rescue.tasks.render.RenderedRow, ItpItem, RankingItem, CheckpointItem): the model
# reads them in the prompt's JSON; rescue writes them as dict literals or encoded text.
_.checkpoint_id
_.current_turn
_.prior_context
_.decision_row
_.target_speaker
_.timestamp
