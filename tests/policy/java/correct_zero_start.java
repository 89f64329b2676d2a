// expect: none
public class SumCalculator {
    public static void main(String[] args) {
        long sum = 0;
        for (int i = 0; i <= 100; i++) sum += i;
        System.out.println(sum);
    }
}
