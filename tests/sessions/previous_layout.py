"""The session tables as the version before per-key scope rows made them (scope rows of one JSON object each,
no unique keys): the tests of the migration and of the unique keys build old stores from it."""

PREVIOUS_TABLES = """
CREATE TABLE sessions (app_name VARCHAR, user_id VARCHAR, id VARCHAR, state_json VARCHAR, version BIGINT,
                       create_time DOUBLE, update_time DOUBLE, pending_json VARCHAR, state_version BIGINT,
                       tail_bytes BIGINT);
CREATE TABLE events (app_name VARCHAR, user_id VARCHAR, session_id VARCHAR, id VARCHAR, seq BIGINT,
                     invocation_id VARCHAR, author VARCHAR, timestamp DOUBLE, state_delta_json VARCHAR,
                     deleted_keys_json VARCHAR, event_json VARCHAR);
CREATE TABLE app_states (app_name VARCHAR, state_json VARCHAR, update_time DOUBLE, version BIGINT,
                         applied_json VARCHAR);
CREATE TABLE user_states (app_name VARCHAR, user_id VARCHAR, state_json VARCHAR, update_time DOUBLE,
                          version BIGINT, applied_json VARCHAR);
"""
