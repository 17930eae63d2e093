"""Names the dead-code finder (vulture, run by tests/test_architecture.py) cannot see used, each with why.

Listing a name here is a claim that it is used; delete the line when the use goes.
"""

# ruff: noqa: B018, F821
_ = object()

# Qt calls these overrides by name.
_.paintEvent
_.wheelEvent
_.mouseDoubleClickEvent
_.dragEnterEvent
_.dropEvent
_.sizeHint
_.headerData
# torch.nn.Module.__call__ calls forward.
_.forward
# Attributes set on other libraries' objects, which read them (PyAV streams and codec contexts, onnxruntime
# session options, Selenium options, pyqtgraph's TextItem).
_.pix_fmt
_.gop_size
_.max_b_frames
_.thread_type
_.thread_count
_.skip_frame
_.sample_rate
_.intra_op_num_threads
_.inter_op_num_threads
_.log_severity_level
_.enable_cpu_mem_arena
_.binary_location
_.anchors
# Fields of dataclasses written whole (asdict, JSON, the store's columns) and read by name there.
_.created_at
_.multi_select
_.href
_.style_family
_.has_pointer
# Part of the lru_cache key of an image header: a file changed in place reads again.
_.mtime_ns
_.ino
# gui_app/qt/main_window.py: handlers the declarative action table (gui_app/qt/action_table.py) names as strings,
# some as a part's method (``scorer.score_current``).
_.score_current
_.rescore
_.ask_judge
_.present
_.ask_annotator
_.ask_label_store
_.dragEnterEvent
_.export_dialog
_.first_step
_.frame_next
_.frame_prev
_.last_step
_.open_folder_dialog
_.open_trajectory_dialog
_.prev_trajectory
_.queue_disagreement
_.queue_models
_.queue_harm
_.queue_next
_.queue_off
_.queue_prev
_.queue_teach
_.queue_uncertain
_.score_shown
_.set_compare
_.set_focus_layout
_.set_library_dock_visible
_.set_queue_dock_visible
_.set_review_dock_visible
_.set_steps_dock_visible
_.set_timeline_dock_visible
_.speed_down
_.speed_up
_.step_next
_.step_prev
_.use_model_dialog
_.use_shipped_model
# gui_app/recorders/desktop/threats.py: http.server calls a handler's do_<METHOD> and log_message by name and reads
# its protocol_version; socketserver reads the server's daemon_threads.
_.do_GET
_.do_POST
_.do_PUT
_.log_message
_.protocol_version
_.daemon_threads
