//! Files off the executor's thread: operations on paths with the OS's
//! errors passed through, a `File` whose writes land in the background and
//! whose errors come with the next call, reads and writes that keep the
//! file's position as `std`'s does, the `futures-io` traits, and a file
//! moved between the workers of the multi-thread executor.
//! Not under Miri, whose file system does not model all of these calls.
#![cfg(not(miri))]

use std::io::{self, SeekFrom};

use dinah::LocalExecutor;
use dinah::executor::{MultiConfig, MultiExecutor};
use dinah::fs::{self, File};

mod support;
use support::temp_dir::TempDir as Dir;

#[test]
fn path_operations_do_what_std_does_and_pass_its_errors_through() {
    let dir = Dir::new("fs-paths");
    let executor = LocalExecutor::new();
    executor
        .block_on(async {
            let a = dir.path("a.txt");
            fs::write(&a, b"alpha").await?;
            assert_eq!(fs::read(&a).await?, b"alpha");
            assert_eq!(fs::read_to_string(&a).await?, "alpha");
            assert_eq!(fs::metadata(&a).await?.len(), 5);
            assert!(fs::try_exists(&a).await?);
            assert_eq!(fs::copy(&a, dir.path("b.txt")).await?, 5);
            fs::rename(dir.path("b.txt"), dir.path("c.txt")).await?;
            fs::create_dir_all(dir.path("sub/deeper")).await?;
            fs::create_dir(dir.path("sub/other")).await?;
            let mut names: Vec<String> = fs::read_dir(&dir.0)
                .await?
                .iter()
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            assert_eq!(names, ["a.txt", "c.txt", "sub"]);
            assert_eq!(fs::canonicalize(&a).await?, std::fs::canonicalize(&a)?);
            fs::remove_file(&a).await?;
            assert!(!fs::try_exists(&a).await?);
            fs::remove_dir(dir.path("sub/other")).await?;
            let not_empty = fs::remove_dir(dir.path("sub")).await.unwrap_err();
            assert_eq!(
                not_empty.kind(),
                io::ErrorKind::DirectoryNotEmpty,
                "{not_empty}"
            );
            fs::remove_dir_all(dir.path("sub")).await?;
            let missing = fs::read(&a).await.unwrap_err();
            assert_eq!(missing.kind(), io::ErrorKind::NotFound, "{missing}");
            let not_text = dir.path("bytes");
            fs::write(&not_text, [0xff, 0xfe]).await?;
            let invalid = fs::read_to_string(&not_text).await.unwrap_err();
            assert_eq!(invalid.kind(), io::ErrorKind::InvalidData, "{invalid}");
            Ok::<(), io::Error>(())
        })
        .unwrap();
}

#[test]
fn a_file_written_in_chunks_reads_back_whole_and_keeps_its_position() {
    let dir = Dir::new("fs-file");
    let path = dir.path("data");
    let executor = LocalExecutor::new();
    executor
        .block_on(async {
            // Several times the 64 KiB a background write moves.
            let data: Vec<u8> = (0..300_000u32).map(|i| (i % 253) as u8).collect();
            let mut file = File::create(&path).await?;
            file.write_all(&data).await?;
            file.flush().await?;
            file.sync_all().await?;
            assert_eq!(file.metadata().await?.len(), data.len() as u64);
            drop(file);
            let mut file = File::open(&path).await?;
            let mut back = Vec::new();
            assert_eq!(file.read_to_end(&mut back).await?, data.len());
            assert!(back == data, "the bytes came back in order");
            // At the end: a read gives 0.
            assert_eq!(file.read(&mut [0u8; 8]).await?, 0);
            // Position: read 3, then write over the next 3, as std would.
            let mut file = File::open_with(
                std::fs::OpenOptions::new().read(true).write(true).clone(),
                &path,
            )
            .await?;
            let mut three = [0u8; 3];
            assert_eq!(file.read(&mut three).await?, 3);
            assert_eq!(three, [0, 1, 2]);
            file.write_all(b"xyz").await?;
            assert_eq!(file.seek(SeekFrom::Current(0)).await?, 6);
            assert_eq!(file.seek(SeekFrom::Start(0)).await?, 0);
            let mut six = [0u8; 6];
            let mut got = 0;
            while got < six.len() {
                got += file.read(&mut six[got..]).await?;
            }
            assert_eq!(six, [0, 1, 2, b'x', b'y', b'z']);
            file.set_len(4).await?;
            assert_eq!(file.seek(SeekFrom::End(0)).await?, 4);
            let std_file = file.into_std().await?;
            assert_eq!(std_file.metadata()?.len(), 4);
            Ok::<(), io::Error>(())
        })
        .unwrap();
}

#[test]
fn a_background_write_that_fails_is_reported_by_the_next_call() {
    let dir = Dir::new("fs-failing");
    let path = dir.path("read-only");
    std::fs::write(&path, b"kept").unwrap();
    let executor = LocalExecutor::new();
    executor.block_on(async {
        // Opened to read only: the OS refuses the write on the pool.
        let mut file = File::open(&path).await.unwrap();
        assert_eq!(
            file.write(b"lost").await.unwrap(),
            4,
            "the bytes were taken"
        );
        let error = file.flush().await.unwrap_err();
        assert!(
            matches!(error.raw_os_error(), Some(code) if code == 9),
            "EBADF expected: {error}"
        );
        // Reported once: the file goes on.
        file.flush().await.unwrap();
        let mut back = Vec::new();
        file.read_to_end(&mut back).await.unwrap();
        assert_eq!(back, b"kept");
        // The same through the next write instead of a flush.
        assert_eq!(file.write(b"a").await.unwrap(), 1);
        assert!(file.write(b"b").await.is_err());
    });
    assert_eq!(std::fs::read(&path).unwrap(), b"kept");
}

#[test]
fn futures_io_traits_read_write_and_seek_a_file() {
    use futures_util::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};
    let dir = Dir::new("fs-traits");
    let path = dir.path("t");
    let executor = LocalExecutor::new();
    executor
        .block_on(async {
            let mut file = File::open_with(
                std::fs::OpenOptions::new()
                    .create(true)
                    .read(true)
                    .write(true)
                    .clone(),
                &path,
            )
            .await?;
            AsyncWriteExt::write_all(&mut file, b"hello, file").await?;
            AsyncWriteExt::flush(&mut file).await?;
            assert_eq!(AsyncSeekExt::seek(&mut file, SeekFrom::Start(7)).await?, 7);
            let mut rest = String::new();
            AsyncReadExt::read_to_string(&mut file, &mut rest).await?;
            assert_eq!(rest, "file");
            AsyncWriteExt::close(&mut file).await?;
            Ok::<(), io::Error>(())
        })
        .unwrap();
}

#[test]
fn multi_executor_tasks_share_the_io_pool_and_move_files_between_workers() {
    fn assert_send<T: Send>(_: &T) {}
    let dir = Dir::new("fs-multi");
    let executor = MultiExecutor::with_config(MultiConfig {
        workers: Some(2),
        ..MultiConfig::default()
    })
    .unwrap();
    let handle = executor.handle();
    let writers: Vec<_> = (0..16u8)
        .map(|n| {
            let path = dir.path(&format!("f{n}"));
            handle
                .try_spawn(async move {
                    let mut file = File::create(&path).await?;
                    assert_send(&file);
                    file.write_all(&[n; 1000]).await?;
                    file.flush().await?;
                    dinah::task::yield_now().await;
                    fs::read(&path).await
                })
                .unwrap_or_else(|_| unreachable!())
        })
        .collect();
    let contents = executor.block_on(async {
        let mut all = Vec::new();
        for writer in writers {
            all.push(writer.await.unwrap().unwrap());
        }
        all
    });
    for (n, bytes) in contents.iter().enumerate() {
        assert_eq!(bytes, &vec![n as u8; 1000]);
    }
    assert!(dinah::pool::io_pool_stats().accepted >= 16 * 3);
}
