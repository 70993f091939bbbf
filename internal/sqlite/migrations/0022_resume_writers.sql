-- A run that resumes writes its checkpoints into the folder of the task it resumes from (resume_from), and only
-- one run may write a folder at a time: a new task that resumes is refused while another task writes there. The
-- tasks that resume are few; this index holds them alone.
CREATE INDEX tasks_by_resume_from ON tasks (resume_from) WHERE resume_from != '';
