//! Streamed reading (traces::stream_jobs) gives exactly what the whole-file reader
//! (traces::load) gives: the same jobs in the same order, the same errors.

mod common;

use sim::JobSpec;
use std::path::{Path, PathBuf};
use traces::{Format, Order, TraceError, load, stream_jobs};

fn streamed(path: &Path, format: Format, order: Order) -> Result<Vec<JobSpec>, TraceError> {
    stream_jobs(path, format, order)?.collect()
}

fn loaded(path: &Path, format: Format) -> Result<Vec<JobSpec>, TraceError> {
    load(path, format).map(|trace| trace.workload.into_jobs())
}

/// The stream's jobs are the whole-file reader's, job for job (and there are some).
fn assert_same_jobs(path: &Path, format: Format, order: Order) {
    let expected = loaded(path, format).expect("the whole-file reader reads it");
    let got = streamed(path, format, order).unwrap_or_else(|e| panic!("{order:?}: {e}"));
    assert!(!expected.is_empty());
    assert_eq!(got.len(), expected.len(), "{order:?}: job count");
    for (i, (got, expected)) in got.iter().zip(&expected).enumerate() {
        assert_eq!(got, expected, "{order:?}: job {i}");
    }
}

/// The stream's error is the whole-file reader's, word for word.
fn assert_same_error(path: &Path, format: Format, order: Order) {
    let expected = loaded(path, format).expect_err("the whole-file reader refuses it").to_string();
    let got = streamed(path, format, order).expect_err("the stream refuses it").to_string();
    assert_eq!(got, expected, "{order:?}");
}

/// A file of `text` in a fresh directory of its own; `name` is its file name.
fn write(test: &str, name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("schedlab-stream-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("temp file");
    path
}

#[test]
fn philly_sorted_first_is_the_whole_file_reader() {
    let Some(dir) = common::shared_traces() else { return };
    let path = dir.join("philly-pollux/philly.csv");
    assert_same_jobs(&path, Format::Philly, Order::Sort);
    // The file is not in submit order: line 3 is submitted before line 2.
    let e = streamed(&path, Format::Philly, Order::Sorted).unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "{}:3: submitted at 2017-10-09 06:13:03, before line 2's 2017-10-09 07:01:55: the trace is not in \
             submission order; sort it first (simulate --sort) or give it sorted",
            path.display()
        )
    );
}

#[test]
fn itp_streams_as_the_whole_file_reader_reads_it_in_either_order() {
    let Some(dir) = common::shared_traces() else { return };
    let path = dir.join("microsoft-itp-elasticflow/cluster04.csv");
    assert_same_jobs(&path, Format::Itp, Order::Sorted);
    assert_same_jobs(&path, Format::Itp, Order::Sort);
}

/// Multi-task jobs, a DAG, queues, owners, a co-start job, ties, a quoted name with a line
/// break in it, CRLF line ends and a blank line: out of submit order.
const CANONICAL: &str = "job_id,task_id,submit_s,duration_s,gpus,queue,depends_on,co_start,account\n\
    late,0,50,10,1,q2,,,\n\
    dag,prep,20,5,1,q1,,,lab\n\
    dag,train,20,100,4,q1,prep,,lab\n\
    dag,eval,20,5,1,q1,train:any;prep,,lab\n\
    \"quoted,\nname\",0,20,7,2,,,,\r\n\
    \r\n\
    early,0,1.5,3,1,q2,,,\n\
    het,a,20,9,2,q1,,true,\n\
    het,b,20,9,1,q1,,true,\n\
    tie,0,50,1,1,,,,\n";

#[test]
fn canonical_streams_as_the_whole_file_reader_reads_it() {
    let path = write("canonical", "jobs.csv", CANONICAL);
    assert_same_jobs(&path, Format::Canonical, Order::Sort);
    let jobs = streamed(&path, Format::Canonical, Order::Sort).unwrap();
    let names: Vec<&str> = jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, ["early", "dag", "quoted,\nname", "het", "late", "tie"]);
    assert_eq!(jobs[1].tasks[2].deps.len(), 2);
    // A directory reads its jobs.csv.
    assert_same_jobs(path.parent().unwrap(), Format::Canonical, Order::Sort);
    // Out of order, refused: `dag` (line 3, submitted at 20) comes after `late` (line 2, at 50).
    let e = streamed(&path, Format::Canonical, Order::Sorted).unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "{}:3: submitted at 20, before line 2's 50: the trace is not in submission order; sort it first \
             (simulate --sort) or give it sorted",
            path.display()
        )
    );
    // In order, every job read once, front to back.
    let mut sorted = String::from(CANONICAL.lines().next().unwrap());
    sorted.push('\n');
    let rows: Vec<&str> = CANONICAL.split_inclusive('\n').skip(1).collect();
    // Lines, not rows: the quoted name spans two, and a blank line follows it.
    for index in [7, 1, 2, 3, 4, 5, 6, 8, 9, 0, 10] {
        sorted.push_str(rows[index]);
    }
    let path = write("canonical-sorted", "jobs.csv", &sorted);
    assert_same_jobs(&path, Format::Canonical, Order::Sorted);
    assert_same_jobs(&path, Format::Canonical, Order::Sort);
}

#[test]
fn canonical_sort_rereads_jobs_far_apart_in_a_long_file() {
    // Jobs in reverse submit order, each far from the next in the file (past any read chunk),
    // some of them quoted: every job is read again after a seek.
    let mut text = String::from("job_id,task_id,submit_s,duration_s,gpus,dataset\n");
    for i in (0..300).rev() {
        let pad = "x".repeat(97);
        if i % 3 == 0 {
            text.push_str(&format!("\"j{i}\",a,{i},1,1,\"{pad}\"\n\"j{i}\",b,{i},2,1,{pad}\n"));
        } else {
            text.push_str(&format!("j{i},a,{i},1,1,{pad}\r\n\nj{i},b,{i},2,1,{pad}\n"));
        }
    }
    let path = write("canonical-far", "jobs.csv", &text);
    assert_same_jobs(&path, Format::Canonical, Order::Sort);
}

#[test]
fn out_of_order_rows_are_named_with_both_times_as_written() {
    let path = write(
        "philly-order",
        "philly.csv",
        "timestamp,duration,num_gpus,gpu_time,cluster\n\
         2017-10-09 07:01:55,66.0,1,66.0,11cb48\n\
         2017-10-09 07:01:55,60.0,1,60.0,11cb48\n\
         2017-10-09 06:13:03,2951.0,2,5902.0,6214e9\n",
    );
    let mut stream = stream_jobs(&path, Format::Philly, Order::Sorted).unwrap();
    // Equal times are in order; the jobs before the one out of order come first.
    assert_eq!(stream.next().unwrap().unwrap().name, "philly-2");
    assert_eq!(stream.next().unwrap().unwrap().name, "philly-3");
    let e = stream.next().unwrap().unwrap_err();
    assert_eq!((e.file_name(), e.line()), (Some(path.display().to_string().as_str()), Some(4)));
    let message = e.to_string();
    assert!(message.contains("submitted at 2017-10-09 06:13:03, before line 3's 2017-10-09 07:01:55"), "{message}");
    assert!(message.contains("not in submission order"), "{message}");
    assert!(stream.next().is_none(), "the stream ends after an error");
    assert_same_jobs(&path, Format::Philly, Order::Sort);
}

#[test]
fn bad_rows_are_refused_with_the_whole_file_readers_words() {
    let cases = [
        (
            Format::Philly,
            "philly.csv",
            "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,abc,1,66.0,11cb48\n",
        ),
        (
            Format::Philly,
            "philly.csv",
            "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66.0,2,66.0,1\n",
        ),
        (Format::Itp, "c.csv", "job_id,submission_time,duration,num_gpu\na,1,600,1\na,2,600,1\n"),
        (Format::Itp, "c.csv", "job_id,submission_time,duration,num_gpu\na,1,600,x\n"),
        (Format::Itp, "c.csv", "job_id,duration,num_gpu\na,600,1\n"),
        (Format::Itp, "c.csv", "job_id,submission_time,duration,num_gpu\n"),
        (Format::Canonical, "jobs.csv", "job_id,submit_s,duration_s,gpus\na,0,1,1\nb,0,1\n"),
        (Format::Canonical, "jobs.csv", "job_id,submit_s,duration_s,gpus\na,0,1,1\nb,0,1,1\na,0,1,1\n"),
        (
            Format::Canonical,
            "jobs.csv",
            "job_id,task_id,submit_s,duration_s,gpus,depends_on\nd,p,2,1,1,q\nd,q,2,1,1,p\n",
        ),
        (Format::Canonical, "jobs.csv", "job_id,task_id,submit_s,duration_s,gpus,depends_on\nd,p,2,1,1,zz\n"),
        // Refused by the simulator's check of a whole job (Workload::new), not by a row.
        (
            Format::Canonical,
            "jobs.csv",
            "job_id,task_id,submit_s,duration_s,gpus,depends_on,co_start\nh,a,0,1,1,,true\nh,b,0,1,1,a,true\n",
        ),
        (Format::Canonical, "jobs.csv", "timestamp,duration,num_gpus,gpu_time,cluster\n"),
    ];
    for (i, (format, name, text)) in cases.into_iter().enumerate() {
        let path = write(&format!("bad-{i}"), name, text);
        assert_same_error(&path, format, Order::Sorted);
        assert_same_error(&path, format, Order::Sort);
    }
}

#[test]
fn openb_and_sacct_say_they_are_read_whole() {
    for format in [Format::Openb, "sacct".parse().unwrap()] {
        let e = stream_jobs(Path::new("trace.csv"), format, Order::Sorted).err().expect("refused");
        assert!(e.to_string().contains("is read whole, not streamed"), "{e}");
        assert!(!format.streams());
    }
    assert!(Format::Canonical.streams() && Format::Itp.streams() && Format::Philly.streams());
}
